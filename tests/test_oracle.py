from fractions import Fraction

from urd.core.config import load_config
from urd.data import calibrate
from urd.data.oracle import ceiling, oracle_report


def test_oracle_figures_from_generated_data(repo):
    cfg = load_config(repo / "config/config.yaml", repo / "config/schema.yaml")
    t1 = [calibrate.t1_episode(cfg, i) for i in range(cfg["episodes"])]
    t2 = [calibrate.t2_episode(cfg, i) for i in range(cfg["episodes"])]
    rep = oracle_report(cfg, t1, t2)
    assert rep["t1_oracle"]["over"]["ceiling"] == 0.786
    assert rep["t1_oracle"]["over"]["ceiling_exact"] == "11/14"
    assert rep["t1_oracle"]["over"]["values_held"] == [16] * 6
    assert rep["t1_oracle"]["sanity"]["ceiling"] == 1.0
    assert rep["t1_oracle"]["over"]["payload_bytes"] == 480
    assert 1700 <= rep["sessions"]["t1_tokens"]["mean"] <= 1900
    assert 450 <= rep["sessions"]["t2_bytes"]["mean"] <= 530


def test_ceiling_follows_budget_and_exposure(repo):
    cfg = load_config(repo / "config/config.yaml", repo / "config/schema.yaml")
    ep = calibrate.t1_episode(cfg, 0)
    quota = cfg["tasks"]["t1"]["quota"]
    assert ceiling(ep, quota, 60) == (Fraction(3, 4), 8)  # 8 values: exactly the hot mass
    assert ceiling(ep, quota, 7) == (Fraction(0), 0)  # not one 60-bit value fits
    # Demote one hot key to once-shown: the hot mass is then shared by 7 keys.
    first_hot = next(p for p in ep["pairs"] if p["hot"])
    lines = [l for l in ep["lines"] if f" {first_hot['key']} " not in l]
    lines.append(f"Record: the code for {first_hot['key']} is {first_hot['value']}.")
    c, n = ceiling({**ep, "lines": lines}, quota, 120)
    assert n == 16 and c == Fraction(3, 4) + Fraction(1, 4) * 9 / 57
