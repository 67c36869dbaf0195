"""benchmarks/run_record.py reads a finished Snakemake run from Snakemake's own records (its
run log, the per-output metadata, the benchmark files) into jobs with times and dependencies,
and takes the floor the work allows: the longest dependent chain or the CPU over the cores."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from run_record import critical_path, floor, read_run

LOG = """Building DAG of jobs...
[Sat Dec  5 07:27:14 2026]
localrule make:
    output: m.pth
    log: logs/make.log
    jobid: 3
    reason: Missing output files: m.pth
    resources: tmpdir=/tmp

[Sat Dec  5 07:27:15 2026]
localrule decode:
    input: m.pth, data.jsonl
    output: notes/{w}.jsonl, notes/{w}.extra
    log: logs/decode.log
    jobid: 2
    benchmark: bench/decode.tsv
    wildcards: system=summary
    resources: tmpdir=/tmp, cpu_seconds=30, runtime=12, mem_mb=485

[Sat Dec  5 07:27:16 2026]
rule judge:
    input: m.pth
    output: judged.jsonl
    jobid: 1
    resources: tmpdir=/tmp, cpu_seconds=4, runtime=10
[Sat Dec  5 07:27:17 2026]
localrule table:
    input: notes/{w}.jsonl, judged.jsonl
    output: table.json
    jobid: 0
Finished jobid: 0 (Rule: table)
"""


def _run(tmp_path: Path, times: dict[str, tuple[float, float]], cpu_of_decode: float | None = 25.0) -> Path:
    (tmp_path / ".snakemake/log").mkdir(parents=True)
    (tmp_path / ".snakemake/log/2026-12-05T072714.snakemake.log").write_text(LOG.replace("{w}", "summary"))
    meta = tmp_path / ".snakemake/metadata"
    meta.mkdir()
    for out, (start, end) in times.items():
        name = base64.b64encode(out.encode()).decode().replace("/", "@")
        (meta / name).write_text(json.dumps({"starttime": start, "endtime": end}))
    if cpu_of_decode is not None:
        (tmp_path / "bench").mkdir()
        (tmp_path / "bench/decode.tsv").write_text(f"s\th:m:s\tmax_rss\tcpu_time\n30.0\t0:00:30\t100\t{cpu_of_decode}\n")
    return tmp_path


TIMES = {"m.pth": (0.0, 5.0), "notes/summary.jsonl": (5.0, 35.0), "judged.jsonl": (5.0, 9.0),
         "table.json": (35.0, 36.0)}


def test_jobs_their_times_their_planned_cpu_and_their_dependencies(tmp_path):
    jobs = read_run(_run(tmp_path, TIMES))
    by = {j.rule: j for j in jobs}
    assert [j.rule for j in jobs] == ["make", "decode", "judge", "table"]
    assert by["decode"].outputs == ["notes/summary.jsonl", "notes/summary.extra"]
    assert by["decode"].wildcards == "system=summary" and by["decode"].planned_cpu == 30
    assert by["make"].planned_cpu is None and by["judge"].planned_cpu == 4
    assert (by["decode"].wall, by["decode"].cpu_sampled) == (30.0, 25.0)
    assert (by["judge"].wall, by["judge"].cpu_sampled) == (4.0, None)  # no benchmark file
    assert by["decode"].deps == [0] and by["table"].deps == [1, 2] and by["make"].deps == []


def test_the_critical_path_is_the_longest_dependent_chain_and_the_floor_its_max_with_cpu_over_cores(tmp_path):
    jobs = read_run(_run(tmp_path, TIMES))
    seconds, path = critical_path(jobs)
    assert seconds == 36.0 and [j.rule for j in path] == ["make", "decode", "table"]
    f = floor(jobs, cores=2)
    assert f["work"] == 5 + 30 + 4 + 1 and f["floor"] == 36.0
    slow = read_run(_run(tmp_path / "b", dict(TIMES, **{"judged.jsonl": (5.0, 65.0)})))
    seconds, path = critical_path(slow)
    assert seconds == 66.0 and [j.rule for j in path] == ["make", "judge", "table"]
    assert floor(slow, cores=1)["floor"] == 5 + 30 + 60 + 1  # one core: the work is the floor


def test_a_run_without_its_records_is_refused_naming_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="no Snakemake run log"):
        read_run(tmp_path)
    with pytest.raises(FileNotFoundError, match="judged.jsonl"):
        read_run(_run(tmp_path / "c", {k: v for k, v in TIMES.items() if k != "judged.jsonl"}))
