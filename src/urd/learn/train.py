"""Train the `learned` backbone from a seed: python -m urd.learn.train OUT.pth --settings JSON ...

One step is `t1_per_step` T1 episodes and `t2_per_step` T2 episodes of the training family
(`urd.learn.stream`), each a sequence from the zero state (with `branch_queries`, each query
from the transcript's end state, as the control answers it); the loss is the replies' cross-entropy.
T1's pair count follows a curriculum: drawn uniformly from [pairs_min, cap], where the cap grows
linearly from pairs_min to 64 over the first `ramp_tokens` trained tokens, then stays at 64.
With `gate` set, the curriculum instead moves through `plan.levels` (pairs and code length) only
when the share of T1's seen-key replies the model gets right at its level reaches `gate` (Gate);
with `gate_cold` too, when the hot keys' share reaches `gate` and the cold keys' `gate_cold`
(two bars: the published score asks mostly hot keys).
With `stages` (plan.stages_of), the settings change from a token count on, and the curriculum may
move to a stated level: one run trains a path that moves, say, from a gentler task to the
published one; a stage starts with an empty gate window, as a run continued from its resume point
under new settings with the point's window emptied does.

Every `eval_every` steps the weights are exported in the released format and loaded through the
same path a benchmark job uses (`urd.backbone.adapter.Backbone`); the in-session control is run on
held-out episodes of the published shape (the training family, indices from HELD_OUT up), and
scored with urd's own judges. The record (loss curve, held-out scores, tokens, seconds, threads,
versions, peak memory) is written beside the checkpoint.

Bytes: one thread, deterministic algorithms, every draw seeded: the same settings give the same
checkpoint on the same machine and torch. A killed run resumes from its last saved step
(OUT.resume.pt, written atomically) to the same bytes; the checkpoint appears only when training
ends, written atomically.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import torch

from ..core.errors import InputError, UrdError
from ..core.io import atomic_write_bytes, atomic_write_json, sha256_file
from ..core.machine import machine_record
from ..core.rng import Stream
from ..data import t1
from . import model as M
from . import plan
from . import stream as S
from .plan import settings_of


class Data:
    """The deterministic training and held-out episodes."""

    def __init__(self, s: dict, tasks: dict, ex: S.Exclusions, tokenizer):
        self.s, self.tasks, self.ex, self.tok = s, tasks, ex, tokenizer
        # the gated curriculum's point (plan.levels); the trainer moves it (Gate)
        self.levels, self.level = plan.levels(s), 0

    def _ramp(self, tokens_seen: int) -> float:
        s = self.s
        return min(1.0, tokens_seen / s["ramp_tokens"]) if s["ramp_tokens"] else 1.0

    def cap(self, tokens_seen: int) -> int:
        if self.s["gate"]:
            return self.levels[self.level][0]
        pairs = self.tasks["t1"]["pairs"]  # the published episode's
        return round(self.s["pairs_min"] + self._ramp(tokens_seen) * (pairs - self.s["pairs_min"]))

    def code_length(self, tokens_seen: int) -> int:
        """T1's code length: from value_min to the published length over the same ramp as the
        pairs (copying a short code is learned long before a 12-character one), or at the gated
        curriculum's level."""
        full = self.tasks["t1"]["value_length"]
        if self.s["gate"]:
            return self.levels[self.level][1] if self.levels[self.level][1] < full else full
        return round(self.s["value_min"] + self._ramp(tokens_seen) * (full - self.s["value_min"]))

    def t1_base(self, tokens_seen: int) -> dict:
        return {**self.tasks["t1"], "value_length": self.code_length(tokens_seen)}

    def step(self, step: int, tokens_seen: int) -> list[tuple[list[int], list[bool]]]:
        return [(ids, flags) for ids, flags, _, _ in self.step_with_replies(step, tokens_seen)]

    def step_with_replies(self, step: int, tokens_seen: int) -> list[tuple[list[int], list[bool], list, list]]:
        """A step's sequences, each with its T1 queries' reply positions (S.sequence_with_replies;
        none for T2) and, with branch_queries, where each query starts (Trainable.loss_and_hits
        runs each from the transcript's end state; else none, and they run one after another).
        Gated, every T1 episode is at the level's pairs; else drawn up to the cap."""
        seed, cap, low = self.s["seed"], self.cap(tokens_seen), self.s["pairs_min"]
        n1 = self.s["t1_per_step"]  # T1 episodes are numbered step * n1 + j: one a step is index `step`
        base = self.t1_base(tokens_seen)
        sizes = [cap if self.s["gate"] else low + Stream(S.FAMILY, seed, "pairs", step * n1 + j).below(cap - low + 1)
                 for j in range(n1)]
        eps = [S.t1_episode(seed, i, sizes[j], base, self.ex, bool(self.s["t1_query_all"]), bool(self.s["t1_no_hot"]))
               for j, i in enumerate(S.indices("train", step * n1, n1))]
        eps += [S.t2_episode(seed, i, self.tasks["t2"], self.ex)
                for i in S.indices("train", step * 16, self.s["t2_per_step"])]
        seqs = [S.sequence_with_replies(self.tok, ep) for ep in eps]
        branch = bool(self.s["branch_queries"])
        seqs = [(ids, flags, replies if ep["task"] == "t1" else [], starts if branch else [])
                for (ids, flags, replies, starts), ep in zip(seqs, eps)]
        if self.s["full_loss"]:  # every next token a target, the transcript's too (none after the last,
            # nor, branched, after a query: the next query's first token follows the transcript)
            seqs = [(ids, [True] * (len(ids) - 1) + [False], r, b) for ids, _, r, b in seqs]
            for _, flags, _, starts in seqs:
                for a in starts[1:]:
                    flags[a - 1] = False
        return seqs

    def vocab(self) -> list[int]:
        """The head's token ids: a reply's (model.reply_vocab), and with full_loss every id of the
        first 64 steps' episodes at the curriculum's largest size (a later step's id outside it
        is not a target: Trainable.loss drops it)."""
        ids = set(M.reply_vocab(self.tok))
        if self.s["full_loss"]:
            for step in range(64):
                for seq, _ in self.step(step, 10**12):
                    ids |= set(seq)
            ids.discard(0)
        return sorted(ids)

    def held_out_at(self, tokens_seen: int) -> list[dict]:
        """Held-out T1 episodes at the curriculum's point (its pair cap and code length): where
        the published shape scores 0, they tell whether recall is learned at a shorter length."""
        seed, first = self.s["seed"], S.RANGES["eval_at_level"][0]
        return [S.t1_episode(seed, i, self.cap(tokens_seen), self.t1_base(tokens_seen), self.ex)
                for i in S.indices("eval_at_level", first, int(self.s["eval_episodes"]))]

    def held_out(self, queries: int, block: str = "eval", n: int | None = None) -> dict[str, list[dict]]:
        """Held-out episodes of the published shape, the first of range `block` (urd.learn.stream.RANGES):
        the `eval_episodes` a run evaluates every `eval_every` steps, or `n` of another range
        ("fresh": the check at use's, which no run evaluates, its T2 rules unseen in training too)."""
        seed, n = self.s["seed"], int(self.s["eval_episodes"]) if n is None else n
        spec1 = self.tasks["t1"]
        out = {"t1": [], "t2": []}
        for idx in S.indices(block, S.RANGES[block][0], n):
            out["t1"].append(t1.generate_episode(seed, idx, spec1, queries, root=Stream(S.FAMILY, seed, "t1", idx),
                                                 exclude=self.ex.keys, ids=f"heldout-t1-{idx}"))
            t2_of = S.t2_unseen_rule if block in S.UNSEEN_RULES else S.t2_episode
            out["t2"].append(t2_of(seed, idx, self.tasks["t2"], self.ex))
        return out


class Gate:
    """The gated curriculum's judge: the share of T1's seen-key replies right (teacher-forced,
    every token greedy's pick, so greedy decoding gives the whole reply) over the last `window`
    of them at the current level; at `bar` or above, the curriculum moves to its next level.
    The replies are the step's own, judged before the step learns from them: fresh episodes,
    so this is held-out recall at the level, measured for nothing, read as the training
    sequence reads it: each query from the transcript's end, as the control reads it, with
    branch_queries; else after the earlier questions and answers (docs/learned-backbone.md
    measures how far the two part)."""

    def __init__(self, bar: float, window: int, cold_bar: float = 0):
        self.bar, self.window, self.cold_bar, self.recent, self.kinds = bar, window, cold_bar, [], []

    @classmethod
    def of(cls, s: dict) -> Gate:
        """The gate of settings `s`, its window empty."""
        return cls(float(s["gate"]), int(s["gate_window"]), float(s["gate_cold"]))

    def observe(self, replies: list[tuple[str, range]], hits: set[int]) -> None:
        for kind, positions in replies:
            if kind != "unseen":
                self.recent = (self.recent + [all(p in hits for p in positions)])[-self.window:]
                self.kinds = (self.kinds + [kind])[-self.window:]

    def rate(self, kind: str | None = None) -> float | None:
        """The share right over the window; of one kind's replies only with `kind` (cold keys,
        shown once, are the recall that answering the most-shown code cannot fake)."""
        got = [ok for ok, k in zip(self.recent, self.kinds) if kind in (None, k)]
        return sum(got) / len(got) if got else None

    def reset(self) -> None:
        self.recent, self.kinds = [], []

    def passed(self) -> bool:
        """With a cold bar (gate_cold), two bars: the hot keys' rate must reach the bar and the
        cold keys' the cold bar (the published score's seen-key queries are 15 hot to 5 cold, so
        the pooled rate over every key a training episode asks, mostly cold, asks more than it);
        else the window's rate, every kind pooled, must reach the bar."""
        if len(self.recent) < self.window:
            return False
        if not self.cold_bar:
            return self.rate() >= self.bar
        hot, cold = self.rate("hot"), self.rate("cold")
        return hot is not None and cold is not None and hot >= self.bar and cold >= self.cold_bar


def control_scores(checkpoint: str, episodes: dict[str, list[dict]], decode: dict, code_length: int = 12) -> dict:
    """The in-session control on `episodes`, through the benchmark's own load, decode and judges
    (T1's judge at `code_length`: the curriculum's shorter codes)."""
    from ..backbone.adapter import Backbone
    from ..harness.runner import run_control
    from ..harness.scoring import episode_scores, judge_t1
    from ..session.context import Decode

    bb = Backbone.load(checkpoint, strategy="cpu fp32")
    out = {}
    for task, eps in episodes.items():
        recs = run_control(bb, task, eps, Decode(max_new_tokens=decode[task]["max_new_tokens"]), label="held-out")
        if task == "t1" and code_length != 12:
            recs = [{**r, **judge_t1(r, r["response"], code_length)} for r in recs]
        scores = [episode_scores(task, [r for r in recs if r["episode"] == ep["episode"]]) for ep in eps]
        vals = [x["score"] for x in scores if x["score"] is not None]
        out[task] = {"score_A": sum(vals) / len(vals) if vals else None}
        if task == "t1":
            conf = [x["confabulation"] for x in scores if x["confabulation"] is not None]
            out[task]["confabulation"] = sum(conf) / len(conf) if conf else None
            out[task]["cold_correct"] = sum(x["cold_correct"] for x in scores)
        else:
            out[task]["rate_trigger"] = sum(x["rate_trigger"] for x in scores) / len(scores)
            out[task]["rate_non_trigger"] = sum(x["rate_non_trigger"] for x in scores) / len(scores)
    return out


def export(trainable: M.Trainable, path: str | os.PathLike) -> None:
    atomic_write_bytes(path, M.tiny.checkpoint_bytes(M.released(trainable.state_dict(released_rows=True))))


def _lr(s: dict, step: int, tokens_seen: int) -> float:
    if step < s["warmup_steps"]:
        return s["lr"] * (step + 1) / s["warmup_steps"]
    frac = min(1.0, tokens_seen / s["tokens"])
    return s["lr_final"] + 0.5 * (s["lr"] - s["lr_final"]) * (1 + math.cos(math.pi * frac))


def adam(params: list[torch.Tensor], s: dict) -> torch.optim.Adam:
    return torch.optim.Adam(params, lr=s["lr"], betas=(0.9, 0.99), eps=1e-8)


def initial(s: dict, data: Data) -> M.Trainable:
    """The run's model as its seed starts it."""
    return M.Trainable(M.init_weights(int(s["seed"]), int(s["n_layer"]), int(s["n_embd"]),
                                      tied_head=bool(s["tied_head"]), rwkv_lm=bool(s["rwkv_lm_init"])), data.vocab())


def save_resume(resume: Path, point: dict) -> None:
    """A resume point, written atomically (core.io): a run killed while saving keeps the one before."""
    buf = io.BytesIO()
    torch.save(point, buf)
    atomic_write_bytes(resume, buf.getvalue())


def planned(stages: list[dict]) -> list[dict]:
    """The stages as a resume point and the record state them."""
    return [{**{k: st[k] for k in ("from_tokens", "changes", "level")},
             **({"from_checkpoint": True} if st["from_checkpoint"] else {})} for st in stages]


def resume_from_checkpoint(out: str, checkpoint: str, record_path: str, s: dict, stages: list[dict],
                           tasks: dict, ex: S.Exclusions) -> int:
    """Write OUT's resume point from a finished run's checkpoint and record, so that training OUT
    goes on into the stage after the record's last, which must start `from_checkpoint` at the
    token count that run ended at: the weights as the checkpoint holds them, a fresh Adam, the
    run's step, tokens, seconds, curriculum level and record. A rule training from the seed reaches
    the same point (the stage rounds its weights and empties Adam), so OUT's checkpoint is the
    bytes that run trains if the finished one is the bytes it trains before the stage (the record
    keeps the finished run's last evaluation, which that run would not make). Returns the step."""
    from ..backbone.tokenizer import get_tokenizer

    try:
        with open(record_path, encoding="utf-8") as fh:
            rec = json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(record_path, "file", "a finished run's training record (JSON)", str(exc)) from None
    missing = [x for x in ("sha256", "settings", "steps", "tokens", "seconds", "evals") if x not in rec]
    if missing:
        raise InputError(record_path, missing[0], "a finished run's record (urd.learn.train writes it)", "missing")
    digest = sha256_file(checkpoint)
    if rec["sha256"] != digest:
        raise InputError(record_path, "sha256", f"the checkpoint's {digest} ({checkpoint})", rec["sha256"])
    if settings_of(rec["settings"], record_path) != s:
        raise InputError(record_path, "settings", "the first stage's settings of this run", rec["settings"])
    began = rec.get("stages", [])
    k = len(began)
    ends = plan.run_estimate(s, stages[:k])["tokens"]  # where the finished run ended
    if k >= len(stages) or not stages[k]["from_checkpoint"] or stages[k]["from_tokens"] != ends:
        raise InputError("stages", f"[{k}].from_checkpoint", f"stage {k}, the one after the record's last, starting "
                         f"from_checkpoint at from_tokens {ends:,}, where the finished run ended", stages[k:k + 1])
    key = lambda st: (st["changes"], st["level"], st.get("from_checkpoint", False))
    if [key(x) for x in began] != [key(x) for x in planned(stages[:k])] or any(
            x["tokens"] < st["from_tokens"] for x, st in zip(began, stages)):
        raise InputError(record_path, "stages", "the stages of this run before the from_checkpoint one", began)
    data = Data(s, tasks, ex, get_tokenizer())
    # a gate pass is recorded at the step after it; a stage that begins at that step moves after it
    moves = sorted([(lv["step"], 0, lv["passed"]) for lv in rec.get("levels", [])]
                   + [(st["step"], 1, st["level"]) for st in began if st["level"]])
    level = 0
    for _, is_stage, point in moves:  # a stage sets a level; the gate moves one past the level passed
        level = data.levels.index(tuple(point)) + (0 if is_stage else 1)
    net = initial(s, data)
    try:
        net.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=True))
    except (RuntimeError, KeyError) as exc:
        raise InputError(checkpoint, "weights", "a checkpoint of this run's shape", str(exc)[:200]) from None
    carried = ("settings", "curve", "evals", "levels", "stages")
    record = {"levels": [], "stages": [], **{x: rec[x] for x in carried if x in rec}}
    buf = {"settings": s, "stages": planned(stages), "stages_begun": k, "weights": net.state_dict(),
           "optimizer": adam(net.parameters(), s).state_dict(), "step": rec["steps"], "tokens": rec["tokens"],
           "seconds": rec["seconds"], "record": record, "level": level, "gate_recent": [], "gate_kinds": []}
    save_resume(Path(out + ".resume.pt"), buf)
    return rec["steps"]


def train(out: str, s: dict, tasks: dict, decode: dict, ex: S.Exclusions, log=sys.stderr,
          stages: list[dict] = ()) -> dict:
    """Train OUT from settings `s` (the first stage's) and the later `stages` (plan.stages_of)."""
    from ..backbone.tokenizer import get_tokenizer

    torch.set_num_threads(int(s["threads"]))
    torch.use_deterministic_algorithms(True)
    tok = get_tokenizer()
    data = Data(s, tasks, ex, tok)
    held = data.held_out(sum(tasks["t1"]["quota"].values()))  # the published episode's queries
    net = initial(s, data)
    params = net.parameters()
    opt = adam(params, s)
    resume = Path(out + ".resume.pt")
    stages = list(stages)
    plan_stages = planned(stages)
    record = {"settings": s, "curve": [], "evals": [], **({"levels": []} if s["gate"] or stages else {}),
              **({"stages": []} if stages else {})}
    base, done = s, 0  # the first stage's settings; how many later stages have begun
    end = plan.run_estimate(base, stages)["tokens"]  # where the run ends
    gate = Gate.of(s)
    step = tokens = 0
    spent = 0.0
    if resume.exists():
        ck = torch.load(resume, weights_only=False)
        # a key added since the point was saved reads as its default
        if settings_of(ck["settings"]) != s or ck.get("stages", []) != plan_stages:
            raise InputError(str(resume), "settings", "the settings (and stages) of this run",
                             {"settings": ck["settings"], "stages": ck.get("stages", [])})
        net.load_state_dict(ck["weights"])
        opt.load_state_dict(ck["optimizer"])
        step, tokens, spent, record = ck["step"], ck["tokens"], ck["seconds"], ck["record"]
        done = ck.get("stages_begun", 0)
        s = stages[done - 1]["settings"] if done else base
        data.s, gate = s, Gate.of(s)
        data.level, gate.recent = ck.get("level", 0), ck.get("gate_recent", [])
        gate.kinds = ck.get("gate_kinds", [None] * len(gate.recent))
        print(f"resumed at step {step} ({tokens:,} tokens)", file=log, flush=True)
    started = time.monotonic() - spent
    window = []
    while tokens < s["tokens"] or done < len(stages):
        while done < len(stages) and tokens >= stages[done]["from_tokens"]:
            st = stages[done]
            s = data.s = st["settings"]
            gate = Gate.of(s)
            if st["level"] is not None:
                data.level = data.levels.index(tuple(st["level"]))
            if st["from_checkpoint"]:
                # the weights as the checkpoint holds them, Adam's moments gone: as a shipped
                # checkpoint continued by resume_from_checkpoint starts
                net.load_state_dict(M.released(net.state_dict(released_rows=True)))
                opt = adam(params, s)
            done += 1
            record["stages"].append({"step": step, "tokens": tokens, "changes": st["changes"], "level": st["level"],
                                     **({"from_checkpoint": True} if st["from_checkpoint"] else {})})
            print(f"step {step}: stage {done + 1} begins ({json.dumps(st['changes'], sort_keys=True)}"
                  + (f", at {st['level'][0]} pairs, {st['level'][1]}-character codes" if st["level"] else "")
                  + ")", file=log, flush=True)
        seqs = data.step_with_replies(step, tokens)
        for g in opt.param_groups:
            g["lr"] = _lr(s, step, tokens)
        opt.zero_grad(set_to_none=True)
        total, n = torch.zeros(()), 0
        for ids, flags, replies, starts in seqs:
            loss, k, hits = net.loss_and_hits(ids, flags, starts)
            loss.backward()
            total, n = total + loss.detach(), n + k
            tokens += len(ids)
            gate.observe(replies, hits)
        if s["gate"] and gate.passed() and data.level + 1 < len(data.levels):
            record["levels"].append({"step": step + 1, "tokens": tokens, "passed": list(data.levels[data.level]),
                                     "rate": gate.rate(), "rate_hot": gate.rate("hot"), "rate_cold": gate.rate("cold")})
            data.level = data.level + 1
            gate.reset()
            pairs, length = data.levels[data.level]
            print(f"step {step + 1}: T1 recall {record['levels'][-1]['rate']:.2f} over the last {gate.window} "
                  f"replies; the curriculum moves to {pairs} pairs, {length}-character codes", file=log, flush=True)
        for p in params:
            if p.grad is not None:
                p.grad.div_(max(1, n))
        torch.nn.utils.clip_grad_norm_(params, s["grad_clip"])
        opt.step()
        net.repin()
        step += 1
        window.append(float(total) / max(1, n))
        # the run ends at the last stage's tokens; an earlier stage past its own trains on at its floor
        ending = tokens >= s["tokens"] and done == len(stages)
        if step % 20 == 0:
            el = time.monotonic() - started
            rec = {"step": step, "tokens": tokens, "loss": sum(window) / len(window), "seconds": round(el, 1),
                   "pairs_cap": data.cap(tokens),
                   **({"code_length": data.code_length(tokens), "recall": gate.rate(), "recall_hot": gate.rate("hot"),
                         "recall_cold": gate.rate("cold")}
                      if s["gate"] else {})}
            record["curve"].append(rec)
            window = []
            left = el / tokens * max(0, end - tokens)
            kinds = ", ".join(f"{k} keys {r:.2f}" for k in ("hot", "cold") if (r := gate.rate(k)) is not None)
            gated = (f" codes {rec['code_length']}, recall {gate.rate():.2f}" + (f" ({kinds})" if kinds else "")
                     if s["gate"] and gate.recent else "")
            print(f"step {step} tokens {tokens:,} loss {rec['loss']:.3f} cap {rec['pairs_cap']}{gated} "
                  f"{tokens / el:,.0f} tok/s, {el / 60:.1f} min, ~{left / 60:.0f} min left", file=log, flush=True)
        if step % s["eval_every"] == 0 or ending:
            with tempfile.TemporaryDirectory() as d:
                export(net, Path(d, "eval.pth"))
                sc = control_scores(str(Path(d, "eval.pth")), held, decode)
                cap, length = data.cap(tokens), data.code_length(tokens)
                at_cap = control_scores(str(Path(d, "eval.pth")), {"t1": data.held_out_at(tokens)}, decode,
                                        code_length=length)["t1"]
            where = {"pairs": cap, **({"code_length": length} if length != data.tasks["t1"]["value_length"] else {})}
            record["evals"].append({"step": step, "tokens": tokens, **sc, "t1_at_cap": {**where, **at_cap}})
            print(f"held-out at step {step}: T1 score_A {sc['t1']['score_A']:.3f} (confabulation "
                  f"{sc['t1']['confabulation']}), T2 discrimination {sc['t2']['score_A']:.3f} "
                  f"({sc['t2']['rate_trigger']:.2f}/{sc['t2']['rate_non_trigger']:.2f}); T1 at {cap} pairs, "
                  f"{length}-character codes "
                  f"{at_cap['score_A']:.3f}", file=log, flush=True)
        if step % s["save_every"] == 0 and not ending:
            buf = {"settings": base, "stages": plan_stages, "stages_begun": done, "weights": net.state_dict(),
                   "optimizer": opt.state_dict(), "step": step, "tokens": tokens,
                   "seconds": time.monotonic() - started, "record": record,
                   "level": data.level, "gate_recent": gate.recent, "gate_kinds": gate.kinds}
            save_resume(resume, buf)
    record.update({"steps": step, "tokens": tokens, "seconds": round(time.monotonic() - started, 1),
                   "threads": int(s["threads"]), **machine_record(),
                   "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                   "reply_vocabulary": len(net.vocab)})
    export(net, out)
    record["sha256"] = sha256_file(out)
    if resume.exists():
        resume.unlink()
    return record


def stream_inputs(spec: dict) -> tuple[dict, S.Exclusions]:
    """The tasks' published specs and the evaluated content the training stream excludes, for a
    data spec (`urd.workflow.learn_spec`): what a Data of the training family is built from."""
    tasks = {"t1": spec["rung1"]["tasks"]["t1"], "t2": spec["rung1"]["tasks"]["t2"]}
    return tasks, S.Exclusions.of(evaluated_episodes(spec))


def evaluated_episodes(spec: dict) -> list[dict]:
    """Every episode urd evaluates (rung 1's and rung 2's chains) for a data spec
    (`urd.workflow.learn_spec`): what the training stream must not contain."""
    from ..data import calibrate, chains

    cfg = spec["rung1"]
    out = [calibrate.t1_episode(cfg, i) for i in range(cfg["episodes"])]
    out += [calibrate.t2_episode(cfg, i) for i in range(cfg["episodes"])]
    for v in chains.VARIANTS:
        out += [ep for eps in chains.sessions_by_index(spec["chains"], v).values() for ep in eps]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m urd.learn.train", description=__doc__.split("\n")[0])
    ap.add_argument("out", help="the checkpoint (.pth), written when training ends")
    ap.add_argument("--record", required=True, help="the training record (JSON)")
    ap.add_argument("--settings", default="{}", help="training settings as JSON (see DEFAULTS)")
    ap.add_argument("--stages", default="[]", help="later stages as JSON (see plan.stages_of)")
    ap.add_argument("--spec", required=True,
                    help="the evaluated data's spec and the decoding, as JSON (urd.workflow.learn_spec)")
    ap.add_argument("--from-checkpoint", nargs=2, metavar=("CHECKPOINT", "RECORD"),
                    help="go on from a finished run's checkpoint and record into the stage after the record's "
                         "last, which starts from_checkpoint (resume_from_checkpoint), unless OUT already has a "
                         "resume point")
    a = ap.parse_args(argv)
    try:
        s = settings_of(json.loads(a.settings))
        stages = plan.stages_of(s, json.loads(a.stages))
        plan.check_budget(s, stages=stages)
        spec = json.loads(a.spec)
        tasks, ex = stream_inputs(spec)
        if a.from_checkpoint and not Path(a.out + ".resume.pt").exists():
            at = resume_from_checkpoint(a.out, *a.from_checkpoint, s, stages, tasks, ex)
            print(f"going on from {a.from_checkpoint[0]} at step {at}", file=sys.stderr)
        rec = train(a.out, s, tasks, spec["decode"], ex, stages=stages)
        # what the stream excluded, as the data spec it came from: the check at use holds a
        # config's evaluated episodes to it (urd.learn.check.trained_apart)
        rec["exclusions"] = {"spec": {"rung1": spec["rung1"], "chains": spec["chains"]}}
        atomic_write_json(a.record, rec)
        print(f"wrote {a.out} (sha256 {rec['sha256']})", file=sys.stderr)
    except UrdError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
