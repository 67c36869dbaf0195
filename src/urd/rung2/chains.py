"""Rung 2 — session chains: consolidate after every boundary from the prior fiche and the new
session, then answer every session so far.

After boundary k the system consolidates session k's transcript with the fiche boundary k-1
left (`prior`; none at k = 1) under the rung-1 budget and cap; session B is then run on every
session j <= k from that one fiche. A second, fresh consolidation of session k alone (no prior,
k >= 2) measures what the earlier sessions do to learning the new one. Each step is its own
job (rules/urd2.smk): a boundary's consolidation reads session k's session-A view and the
previous fiche file, nothing else; the answering job reads the fiches and the session-B views.

Figures (fold): R[k][j] = mean over chains of the session-j score after boundary k (T1 recall
on seen keys, T2 discrimination); the in-session control A[j] per session; retention R[k][j]/A[j];
backward transfer BWT(n) = mean over j < n of R[n][j] - R[j][j]; forward transfer FWT(n) = mean
over 2 <= j <= n of R[j][j] - F[j], F[j] the fresh score (defined from n = 2); and retention by
session age a = k - j: the mean of R[j+a][j], and its ratio to the mean of R[j][j] over the same j.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..core.errors import InputError
from ..harness.fold import _r, by_episode, sandbox_labels
from ..harness.runner import answer_cells, answer_control, consolidate_cell, judge_cell
from ..harness.scoring import episode_scores


def select(episodes: list[dict], spec: dict) -> list[dict]:
    """The evaluated chains of one session file: the first `chains` (None = all)."""
    n = spec.get("chains")
    return episodes[:n] if n else episodes


# --- jobs -----------------------------------------------------------------------------------
def consolidate(system, variant_task: str, sessions: list[dict], split: str, budget: int | None, factor: int,
                boundary: int, prior: list[tuple[dict, bytes]] | None) -> list[dict]:
    """Fiche records of one boundary (prior given) or of a fresh consolidation (prior None)."""
    priors = None
    if prior is not None:
        priors = {rec["episode"]: fiche for rec, fiche in prior}
        missing = [ep["episode"] for ep in sessions if ep["episode"] not in priors]
        if missing:
            raise InputError("prior fiches", f"chain {missing[0]}", "the previous boundary's fiche of every chain", "none")
    label = f"{system.name}/{variant_task}/{split}/{'b' if prior is not None or boundary == 1 else 'f'}{boundary}"
    recs = consolidate_cell(system, variant_task, sessions, split, budget, factor, label,
                            priors=priors if prior is not None else ({} if boundary == 1 else None))
    shas = {rec["episode"]: rec["fiche_sha256"] for rec, _ in prior or []}
    return [{**r, "boundary": boundary, "fresh": prior is None and boundary > 1,
             "prior_sha256": shas.get(r["episode"])} for r in recs]


def answer(system, sessions_b: dict[int, list[dict]], chained: list[tuple[dict, bytes]],
           fresh: list[tuple[dict, bytes]] | None, boundary: int, decode) -> list[dict]:
    """Raw replies after `boundary`: every session j <= boundary from the chained fiche, and
    session `boundary` from the fresh one; all decoded together."""
    cells = [(sessions_b[j], chained) for j in sorted(sessions_b)]
    tags = [(j, False) for j in sorted(sessions_b)]
    if fresh is not None:
        cells.append((sessions_b[boundary], fresh))
        tags.append((boundary, True))
    raws = answer_cells(system, cells, decode, label=f"{system.name}/b{boundary}")
    return [{**r, "session": j, "boundary": boundary, "fresh": f} for (j, f), raw in zip(tags, raws) for r in raw]


def control(handle, sessions_a: dict[int, list[dict]], sessions_b: dict[int, list[dict]], decode) -> list[dict]:
    """The in-session control of every session: its transcript and its queries, no boundary."""
    out = []
    for j in sorted(sessions_a):
        out += [{**r, "session": j} for r in answer_control(handle, sessions_a[j], sessions_b[j], decode,
                                                          label=f"control/s{j}")]
    return out


def judge(task: str, data: dict[int, list[dict]], raw: list[dict], fiche_files: dict[tuple[int, bool], list[dict]] | None,
          system: str, split: str | None, source: str) -> list[dict]:
    """responses records: each (boundary, session, fresh) group judged against session j's data
    with the fiches it was answered from (judge_cell); the control when fiche_files is None."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in raw:
        groups[(r.get("boundary"), r["session"], r.get("fresh", False))].append(r)
    out = []
    for (k, j, fresh), recs in sorted(groups.items(), key=lambda kv: (kv[0][0] or 0, kv[0][1], kv[0][2])):
        if j not in data:
            raise InputError(source, f"session {j}", f"one of the sessions {sorted(data)}")
        fiche_recs = None if fiche_files is None else fiche_files.get((k, fresh))
        if fiche_files is not None and fiche_recs is None:
            raise InputError(source, f"boundary {k}{' (fresh)' if fresh else ''}", "replies whose fiches were given")
        judged = judge_cell(task, data[j], recs, fiche_recs, system, split, source=f"{source} (session {j})")
        extra = {"session": j} if k is None else {"session": j, "boundary": k, "fresh": fresh}
        out += [{**rec, **extra} for rec in judged]
    expected = set(data) if fiche_files is None else None
    if expected is not None and {j for (_, j, _) in groups} != expected:
        raise InputError(source, "session", f"control replies for sessions {sorted(expected)}",
                         sorted({j for (_, j, _) in groups}))
    return out


# --- fold -----------------------------------------------------------------------------------
def _scores(task: str, records: list[dict]) -> dict[int, float | None]:
    """Score per chain (the episode field)."""
    return {e: episode_scores(task, recs)["score"] for e, recs in by_episode(records).items()}


def _mean(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def fold_chain(task: str, n: int, lengths: list[int], responses: list[dict], control: list[dict], boot) -> dict:
    """The figures of one (system, variant, split): see the module docstring."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in responses:
        groups[(r["boundary"], r["session"], r["fresh"])].append(r)
    ctrl: dict[int, list[dict]] = defaultdict(list)
    for r in control:
        ctrl[r["session"]].append(r)
    per = {key: _scores(task, recs) for key, recs in groups.items()}  # (k, j, fresh) -> {chain: score}
    a = {j: _scores(task, recs) for j, recs in ctrl.items()}
    chains = sorted({c for scores in per.values() for c in scores})
    for k in range(1, n + 1):
        for j in range(1, k + 1):
            if (k, j, False) not in per:
                raise InputError("responses", f"boundary {k}, session {j}", "the replies of every session so far")
        if k >= 2 and (k, k, True) not in per:
            raise InputError("responses", f"boundary {k} (fresh)", "the fresh consolidation's replies")

    def cell(k, j, fresh=False):
        return _mean(per[(k, j, fresh)].get(c) for c in chains)

    R = [[_r(cell(k, j)) if j <= k else None for j in range(1, n + 1)] for k in range(1, n + 1)]
    A = [_r(_mean(a.get(j, {}).get(c) for c in chains)) for j in range(1, n + 1)]
    F = [None] + [_r(cell(j, j, True)) for j in range(2, n + 1)]
    retention = [[None if R[k][j] is None or not A[j] or A[j] <= 0 else _r(R[k][j] / A[j]) for j in range(n)]
                 for k in range(n)]

    def per_chain_bwt(c, m):
        d = [per[(m, j, False)].get(c) - per[(j, j, False)].get(c) for j in range(1, m)
             if per[(m, j, False)].get(c) is not None and per[(j, j, False)].get(c) is not None]
        return sum(d) / len(d) if d else None

    def per_chain_fwt(c, m):
        d = [per[(j, j, False)].get(c) - per[(j, j, True)].get(c) for j in range(2, m + 1)
             if per[(j, j, False)].get(c) is not None and per[(j, j, True)].get(c) is not None]
        return sum(d) / len(d) if d else None

    transfer = {}
    for m in lengths:
        if m > n:
            raise InputError("config", "urd2.chains.lengths", f"lengths up to the {n} sessions evaluated", m)
        bwt = [per_chain_bwt(c, m) for c in chains]
        fwt = [per_chain_fwt(c, m) for c in chains]
        transfer[str(m)] = {
            "backward": _interval(bwt, boot) if m >= 2 else None,
            "forward": _interval(fwt, boot) if m >= 2 else None,
        }
    ages = {}
    for age in range(n):
        pairs = [(R[j + age][j], R[j][j]) for j in range(n - age) if R[j + age][j] is not None and R[j][j] is not None]
        now = sum(p[1] for p in pairs)
        ages[str(age)] = {"mean": _r(_mean(p[0] for p in pairs)), "pairs": len(pairs),
                          "relative": _r(sum(p[0] for p in pairs) / now) if now > 0 else None}
    first = groups[(1, 1, False)][0]
    return {"R": R, "control_A": A, "fresh": F, "retention": retention, "transfer": transfer, "by_age": ages,
            "chains": len(chains), "sessions": n, "out_of_contract": any(r["out_of_contract"] for r in responses),
            "budget_bytes": first["budget_bytes"],
            "fiche_bytes": {str(k): _r(_mean({r["episode"]: r["fiche_bytes"] for r in groups[(k, 1, False)]}.values()))
                            for k in range(1, n + 1)},
            "sandbox": sandbox_labels(responses)}


def _interval(values: list[float | None], boot) -> dict:
    """Mean over chains and its percentile bootstrap interval (chains resampled)."""
    from ..tables.bootstrap import resample_indices

    xs = np.asarray([v for v in values if v is not None], dtype=float)
    if xs.size == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "chains": 0}
    idx = resample_indices(xs.size, boot.resamples, boot.seed)
    means = xs[idx].mean(axis=1)
    alpha = (1 - boot.level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return {"mean": _r(xs.mean()), "ci_low": _r(low), "ci_high": _r(high), "chains": int(xs.size)}
