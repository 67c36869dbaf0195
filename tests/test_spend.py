"""Planned spend: pure arithmetic, and the line a real ``snakemake -n`` prints."""

from __future__ import annotations

import datetime as dt
import math
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest
from conftest import REPO, snakemake

from urd.core.errors import InputError
from urd.cost.spend import (
    check_prices,
    format_breakdown,
    format_spend_line,
    planned_spend,
    register_spend_preview,
    sweep_of,
)

SRC = REPO / "src"
PRICES = {"as_of": "2026-11-30", "gpu_usd_per_hour": 2.10, "cpu_usd_per_hour": 0.05}
PRICE_TAIL = "(GPU US$2.10/h, CPU US$0.05/h as of 2026-11-30; API US$0.25)"


# ------------------------------------------------------------------ pure functions

def test_planned_spend_sums_and_prices_exactly():
    jobs = [{"gpu_seconds": 5400, "usd_cents": 25, "tmpdir": "/tmp"}, {"cpu_seconds": 720}, {}]
    s = planned_spend(jobs, PRICES)
    assert (s["jobs"], s["gpu_seconds"], s["cpu_seconds"], s["usd_cents"]) == (3, 5400, 720, 25)
    # 1.5 h x 2.10 + 0.2 h x 0.05 + 0.25 = 3.15 + 0.01 + 0.25; no float residue
    assert s["usd_compute"] == Decimal("3.16") and s["usd_api"] == Decimal("0.25") and s["usd_total"] == Decimal("3.41")
    assert format_spend_line(s) == f"urd planned spend (3 jobs to run): GPU 1.50 h, CPU 0.20 h, US$ 3.41 {PRICE_TAIL}"


def test_rounding_is_half_up_at_the_end_and_singular_job():
    s = planned_spend([{"cpu_seconds": 60}], {**PRICES, "cpu_usd_per_hour": 0.3})  # 0.005 $ -> 0.01
    assert s["usd_total"] == Decimal("0.01")
    assert format_spend_line(s).startswith("urd planned spend (1 job to run): GPU 0.00 h, CPU 0.02 h, US$ 0.01")


def test_each_rung2_sweep_gets_its_own_line_and_the_dose_tuning_is_counted_as_dose():
    assert sweep_of("chain_answer", {}) == "rung 2 chains"
    assert sweep_of("sweep_consolidate", {}) == "rung 2 Pareto sweep"
    assert sweep_of("tune_state", {"recipe": "dose19.2"}) == sweep_of("dose_summary", {}) == "rung 2 dose-response"
    assert sweep_of("tune_state", {"recipe": "replay_banc"}) is None and sweep_of("answer", {}) is None
    lines = format_breakdown({"rung 2 chains": [{"cpu_seconds": 7200}],
                              "rung 2 dose-response": [{"gpu_seconds": 3600}, {"cpu_seconds": 0}]}, PRICES)
    assert lines == ["  of which rung 2 chains (1 job): GPU 0.00 h, CPU 2.00 h, US$ 0.10",
                     "  of which rung 2 dose-response (2 jobs): GPU 1.00 h, CPU 0.00 h, US$ 2.10"]


def test_nothing_to_run():
    assert format_spend_line(planned_spend([], PRICES)) == "urd planned spend: nothing to run, nothing to spend (US$ 0.00)"


def test_float_or_negative_resources_are_named():
    with pytest.raises(InputError, match=r"job 1: resources.gpu_seconds: expected a non-negative integer, got 1.5"):
        planned_spend([{}, {"gpu_seconds": 1.5}], PRICES)
    with pytest.raises(InputError, match=r"resources.usd_cents: expected a non-negative integer, got -3"):
        planned_spend([{"usd_cents": -3}], PRICES)


def test_prices_are_checked_field_by_field():
    assert check_prices({**PRICES, "as_of": dt.date(2026, 11, 30)})["as_of"] == "2026-11-30"  # unquoted YAML
    with pytest.raises(InputError, match=r"config: prices.gpu_usd_per_hour: expected a non-negative number"):
        check_prices({**PRICES, "gpu_usd_per_hour": "2.10"})
    with pytest.raises(InputError, match=r"prices.as_of: expected a date YYYY-MM-DD, got 'last week'"):
        check_prices({**PRICES, "as_of": "last week"})
    with pytest.raises(InputError, match=r"prices.tpu_usd_per_hour"):
        check_prices({**PRICES, "tpu_usd_per_hour": 1})


def test_register_rejects_bad_prices_at_parse_time():
    with pytest.raises(InputError, match="prices.cpu_usd_per_hour"):
        register_spend_preview(object(), {**PRICES, "cpu_usd_per_hour": -1})


# ------------------------------------------------------------------ real snakemake -n

SNAKEFILE = """
from urd.cost.spend import register_spend_preview
configfile: "config.yaml"
register_spend_preview(workflow, config["prices"])

rule tune:
    output: "a.txt"
    resources: gpu_seconds=5400
    shell: "echo a > {output}"

rule pack:
    input: "a.txt"
    output: "b.txt"
    resources: cpu_seconds=720
    shell: "echo b > {output}"

rule judge:
    input: "b.txt" if not config.get("broken") else "missing.txt"
    output: "c.txt"
    resources: usd_cents=25
    shell: "echo c > {output}"
"""

CONFIG = """
prices:
  as_of: 2026-11-30
  gpu_usd_per_hour: 2.10
  cpu_usd_per_hour: 0.05
"""


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    (tmp_path / "config.yaml").write_text(CONFIG)
    return tmp_path


def smk(wd: Path, *args: str) -> subprocess.CompletedProcess:
    return snakemake(wd, "-c1", *args)


def last_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not computed" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
    return r.stdout.rstrip("\n").splitlines()[-1]


@pytest.mark.slow
def test_dry_run_prints_spend_and_skips_finished_jobs(workdir):
    full = f"urd planned spend (3 jobs to run): GPU 1.50 h, CPU 0.20 h, US$ 3.41 {PRICE_TAIL}"
    assert last_line(smk(workdir, "-n", "c.txt")) == full
    assert last_line(smk(workdir, "c.txt", "-n", "-q")) == full

    real = smk(workdir, "a.txt")  # run the GPU job for real: it must drop out of the plan
    assert real.returncode == 0 and (workdir / "a.txt").exists(), real.stderr
    assert "urd planned spend" not in real.stdout + real.stderr  # only dry runs report
    assert last_line(smk(workdir, "-n", "c.txt")) == (
        f"urd planned spend (2 jobs to run): GPU 0.00 h, CPU 0.20 h, US$ 0.26 {PRICE_TAIL}"
    )

    assert smk(workdir, "c.txt").returncode == 0
    assert last_line(smk(workdir, "-n", "c.txt")) == "urd planned spend: nothing to run, nothing to spend (US$ 0.00)"


@pytest.mark.slow
def test_failed_dry_run_prints_no_spend(workdir):
    r = smk(workdir, "-n", "c.txt", "--config", "broken=1")
    assert r.returncode != 0 and "missing.txt" in r.stdout + r.stderr
    assert "urd planned spend" not in r.stdout + r.stderr


def test_rows_decoded_in_one_batch_are_priced_stretch_by_stretch(urd_config):
    """The sweep's summary writes every point and episode in one batch, and a row leaves the
    batch when its note ends: the estimate prices each stretch of steps at the measured step
    time of the rows still in it (config cpu_speed's step_ms), not each row as if decoded alone,
    and a note at no more tokens than its budget's bytes hold at the backbone's stated bytes a
    token."""
    import copy

    from urd.cost.estimate import lockstep, step_ms
    from urd.rung2 import plan

    assert lockstep([10, 40, 40, 0]) == {"steps": [(10, 3), (30, 2)]} and lockstep([]) == {"steps": []}
    assert lockstep([5, 5]) == {"steps": [(5, 2)]}
    # measured points, linear between and past the last at its slope; one row is decode_ms
    speed = {"decode_ms_per_token": 50, "batch_tokens_per_s": 500, "step_ms": [[32, 180], [8, 90]]}
    assert step_ms(speed, 1) == 50 and step_ms(speed, 8) == 90 and step_ms(speed, 32) == 180
    assert step_ms(speed, 4) == pytest.approx(50 + 3 * 40 / 7) and step_ms(speed, 20) == pytest.approx(135)
    assert step_ms(speed, 64) == pytest.approx(300)
    # without measured points every row past the first rides at the batched rate
    assert step_ms({"decode_ms_per_token": 50, "batch_tokens_per_s": 500}, 11) == pytest.approx(70)

    config = copy.deepcopy(urd_config)
    config["urd2"]["scales"] = {}
    speed = config["cpu_speed"]["0.1b"]
    at = dict(map(tuple, speed["step_ms"]))
    one = speed["decode_ms_per_token"]
    t6, t12 = one + 5 * (at[8] - one) / 7, at[8] + 4 * (at[32] - at[8]) / 24

    def sweep(episodes, budgets):
        config["urd2"]["pareto"].update(episodes=episodes, budgets=budgets, caps=[10])
        return plan.sweep_cpu_seconds(config, "0.1b", "consolidate", "t1", "summary")

    # t1's transcript is 1,850 tokens: at 10x the cap leaves 16,650 tokens of notes; 960 B at
    # summary's bound of 3 bytes a token: 320. 12 rows for 320 steps, then 6 for the rest
    prefill = 6 * (1850 + 2 * 30) / speed["prefill_tokens_per_s"]
    expected = prefill + (320 * t12 + (16650 - 320) * t6) / 1000 + speed["startup_s"]
    assert sweep(6, [960, 65536]) == math.ceil(expected)
    # twelve episodes cost the longest note's steps once, not twice
    assert sweep(12, [960, 65536]) < 1.5 * sweep(6, [960, 65536])
    assert plan.sweep_cpu_seconds(config, "0.1b", "consolidate", "t1", "vanilla") == speed["startup_s"]
    # a backbone whose note tokens hold 6 bytes: 160 and 10,923 tokens
    config["backbones"]["0.1b"]["note_bytes_per_token"] = 6
    expected = prefill + (160 * t12 + (10923 - 160) * t6) / 1000 + speed["startup_s"]
    assert sweep(6, [960, 65536]) == math.ceil(expected)
    del config["backbones"]["0.1b"]["note_bytes_per_token"]
    # rung 1's summary writes a cell's episodes in one batch too: 960 B of notes is 320 tokens
    from urd.cost.estimate import cell_cpu_seconds

    eps = config["episodes"]
    cell = (eps * 30 / speed["prefill_tokens_per_s"] + 320 * step_ms(speed, eps) / 1000 + speed["startup_s"])
    assert cell_cpu_seconds(config, "0.1b", "t1", "consolidate", "summary", "sanity") == math.ceil(cell)
