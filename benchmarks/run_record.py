"""What a finished Snakemake run took, job by job, read from Snakemake's own records.

A job is read from the run's log (`.snakemake/log/*.snakemake.log`: rule, inputs, outputs,
benchmark file, the planned `cpu_seconds` resource), its start and end from the metadata Snakemake
keeps for each output (`.snakemake/metadata`), and, where the rule declares `benchmark:`, the CPU
seconds Snakemake sampled. Dependencies are the inputs another job of the run wrote.

The floor of a run is what its work allows on N cores: max(the critical path, the jobs' work / N),
where the critical path is the longest chain of dependent jobs' wall times and a job's work is its
wall time. Every job here is single-threaded and bound by its CPU; the benchmark files' CPU seconds
are no better a measure for short jobs: Snakemake samples a job's processes once a second, so the
last second of each is lost (measured on rung 2 at tiny: 90 s over 167 jobs).
"""

from __future__ import annotations

import base64
import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

_RULE = re.compile(r"^(?:local)?rule (\w+):$")
_FIELD = re.compile(r"^    (\w+): (.*)$")


@dataclass
class Job:
    rule: str
    outputs: list[str]
    inputs: list[str]
    wildcards: str = ""
    benchmark: str | None = None
    planned_cpu: float | None = None  # the cpu_seconds resource the spend line prices
    start: float = 0.0
    end: float = 0.0
    cpu_sampled: float | None = None  # the benchmark file's cpu_time, where the rule has one
    deps: list[int] = field(default_factory=list)

    @property
    def wall(self) -> float:
        return self.end - self.start

    @property
    def name(self) -> str:
        return f"{self.rule}[{self.wildcards}]" if self.wildcards else self.rule


def _blocks(log: str):
    """Each job block of a run log as {field: value}, with its rule."""
    cur = None
    for line in log.splitlines():
        m = _RULE.match(line)
        if m:
            cur = {"rule": m[1]}
            continue
        f = _FIELD.match(line) if cur is not None else None
        if f:
            cur[f[1]] = f[2]
            continue
        if cur is not None:
            if "output" in cur:
                yield cur
            cur = None
    if cur is not None and "output" in cur:
        yield cur


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in value.split(", ")] if value else []


def read_run(workdir: Path) -> list[Job]:
    """The jobs of the last run in `workdir`, with their times and dependencies."""
    logs = sorted((workdir / ".snakemake/log").glob("*.snakemake.log"))
    if not logs:
        raise FileNotFoundError(f"{workdir}/.snakemake/log: no Snakemake run log")
    jobs = []
    for b in _blocks(logs[-1].read_text()):
        res = dict(kv.split("=", 1) for kv in _split(b.get("resources")) if "=" in kv)
        jobs.append(Job(rule=b["rule"], outputs=_split(b["output"]), inputs=_split(b.get("input")),
                        wildcards=b.get("wildcards", ""), benchmark=b.get("benchmark"),
                        planned_cpu=float(res["cpu_seconds"]) if "cpu_seconds" in res else None))
    writer = {}
    for i, job in enumerate(jobs):
        meta = workdir / ".snakemake/metadata" / base64.b64encode(job.outputs[0].encode()).decode().replace("/", "@")
        if not meta.exists():
            raise FileNotFoundError(f"{meta}: no metadata for {job.outputs[0]} (did the run finish?)")
        m = json.loads(meta.read_text())
        job.start, job.end = float(m["starttime"]), float(m["endtime"])
        if job.benchmark and (workdir / job.benchmark).exists():
            with open(workdir / job.benchmark) as fh:
                job.cpu_sampled = float(next(csv.DictReader(fh, delimiter="\t"))["cpu_time"])
        writer.update(dict.fromkeys(job.outputs, i))
    for job in jobs:
        job.deps = sorted({writer[p] for p in job.inputs if p in writer})
    return jobs


def critical_path(jobs: list[Job]) -> tuple[float, list[Job]]:
    """The longest chain of dependent jobs by wall time, and its jobs in order."""
    best: dict[int, tuple[float, int | None]] = {}

    def longest(i: int) -> float:
        if i not in best:
            up = max(jobs[i].deps, key=longest, default=None)
            best[i] = (jobs[i].wall + (longest(up) if up is not None else 0.0), up)
        return best[i][0]

    end = max(range(len(jobs)), key=longest)
    chain, i = [], end
    while i is not None:
        chain.append(jobs[i])
        i = best[i][1]
    return best[end][0], chain[::-1]


def floor(jobs: list[Job], cores: int) -> dict:
    """max(critical path, the jobs' work / cores), with both parts and the path itself."""
    path_s, path = critical_path(jobs)
    work = sum(j.wall for j in jobs)
    return {"floor": max(path_s, work / cores), "critical_path": path_s, "path": path,
            "work": work, "work_over_cores": work / cores}
