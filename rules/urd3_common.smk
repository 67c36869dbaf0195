# The helpers and constants of urd rung 3's rules (rules/urd3.smk): paths, the jobs' spec, the
# cells each model gets. Everything here comes from urd.workflow, which loads no model.

U3 = W.urd3
URD3_MANIFEST = U3.manifest(config)
U3_FAMILIES = config["urd3"]["families"]
U3_DATA = {f: f"{U3.data_dir(config)}/{f}.jsonl" for f in U3_FAMILIES}
U3_A = {f: str(W.view_path(p, "session_a")) for f, p in U3_DATA.items()}
U3_B = {f: str(W.view_path(p, "session_b")) for f, p in U3_DATA.items()}
U3_BUDGETS = U3.splits(config)  # the table's splits and the curve's points, with their budgets
U3_TABLE_SPLITS = list(config["urd3"]["budgets"])
U3_CODE = W.code_digest("urd.rung3.cli")

try:  # families, plug-in types (fixtures, templates) and systems, before any job runs
    U3.check(config)
except W.UrdError as exc:
    raise WorkflowError(f"urd config: {exc}") from None


def u3_spec(wildcards):
    return json.dumps(U3.spec(config, wildcards.model), sort_keys=True)


def u3_systems_code(wildcards):
    table = U3.plugins(config)
    return W.code_digest("urd.rung3.cli", W.system_module(wildcards.system, table))


def u3_summary_inputs(wildcards):
    systems, _ = U3.systems(config, wildcards.model)
    cells = dict(system=systems, family=U3_FAMILIES, split=U3_TABLE_SPLITS)
    root = f"results/urd3/{wildcards.model}"
    return {
        "data": list(U3_DATA.values()),
        "checked": [verified(p) for p in U3_DATA.values()],
        "control": expand(f"{root}/control/{{family}}/raw.jsonl", family=U3_FAMILIES),
        "raw": expand(f"{root}/{{system}}/{{family}}/{{split}}/raw.jsonl", **cells),
        "fiches": expand(f"{root}/{{system}}/{{family}}/{{split}}/fiches.jsonl", **cells),
    }


def u3_static(wildcards):
    modules = [W.system_module(s, U3.plugins(config)) for s in config["urd3"]["systems"]]
    return json.dumps(
        {
            "config_sha256": W.config_digest(config),
            "code_sha256": W.code_digest("urd.rung3.cli", *modules),
            "master_seed": config["master_seed"],
        },
        sort_keys=True,
    )


U3_REPLAY = U3.replay_recipes(config)  # {system: recipe}: their artifacts come from rule tune_state


def u3_artifacts(wildcards):
    """A replay system's tuning artifacts on a backbone, one an evaluated episode of the family
    (rules/replay.smk makes them, named by the transcript's SHA-256); none for another system."""
    recipe = U3_REPLAY.get(wildcards.system)
    if recipe is None or wildcards.model not in config["backbones"]:
        return {}
    shas = [t.sha256 for t in U3.transcripts(config, wildcards.family)]
    names = ("costs.json", "time_state.npy")
    return {
        "artifacts": [replay_artifact(wildcards.model, recipe, s, n) for s in shas for n in names]
    }


def u3_artifacts_dir(wildcards):
    recipe = U3_REPLAY.get(wildcards.system)
    return f"artifacts/replay/{wildcards.model}/{recipe}" if recipe else ""


def u3_model(wildcards):
    """A backbone model's checkpoint and its checks (none for the scripted reader); an LLM's jobs
    read the schema their agent-memory settings are checked against."""
    if U3.is_llm(config, wildcards.model):
        return {"agentmem_schema": "config/agentmem.schema.yaml"}
    if wildcards.model not in config["backbones"]:
        return {}
    model = model_path(wildcards.model)
    return {
        "model": model,
        "model_checked": verified(model),
        "model_check": learned_check(wildcards.model),
    }


def u3_curve_inputs(wildcards):
    systems, splits = U3.curve_cells(config, wildcards.model)
    cells = dict(system=systems, family=U3_FAMILIES, split=splits)
    root = f"results/urd3/{wildcards.model}"
    return {
        "data": list(U3_DATA.values()),
        "checked": [verified(p) for p in U3_DATA.values()],
        "control": expand(f"{root}/control/{{family}}/raw.jsonl", family=U3_FAMILIES),
        "raw": expand(f"{root}/{{system}}/{{family}}/{{split}}/raw.jsonl", **cells),
        "fiches": expand(f"{root}/{{system}}/{{family}}/{{split}}/fiches.jsonl", **cells),
    }


def u3_resources(step):
    """A rung-3 job's resources (urd.rung3.plan.resources): CPU seconds for the spend line, memory
    and wall time for a cluster; an answer, control or consolidate job's API dollars (usd_cents) too.
    """

    def resource(key):
        return lambda wc: U3.resources(
            config,
            wc.model,
            wc.get("family", U3_FAMILIES[0]),
            step,
            wc.get("system"),
            wc.get("split"),
        )[key]

    def usd_cents(
        wc,
    ):  # an LLM's answer, control and note-writing jobs: the estimate, in whole cents
        return U3.usd_cents(config, wc.model, wc.family, step, wc.get("system"), wc.get("split"))

    extra = {"usd_cents": usd_cents} if step in ("answer", "control", "consolidate") else {}
    return {**{k: resource(k) for k in ("cpu_seconds", "mem_mb", "runtime")}, **extra}
