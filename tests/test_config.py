"""Bad config values fail with one line naming the key and what was expected."""

from __future__ import annotations

import copy

import pytest
import yaml

from urd.core.config import load_config, validate_config
from urd.core.errors import InputError


@pytest.fixture(scope="module")
def base(repo):
    return yaml.safe_load((repo / "config/config.yaml").read_text())


@pytest.mark.parametrize(
    "mutate, key, expected",
    [
        (lambda c: c.update(bogus=1), "bogus", "a known key"),
        (lambda c: c.update(episodes="six"), "episodes", "type integer"),
        (lambda c: c.update(episodes=0), "episodes", ">= 1"),
        (lambda c: c["tasks"]["t1"].update(extra=3), "tasks.t1.extra", "a known key"),
        (lambda c: c.pop("master_seed"), "master_seed", "required"),
        (lambda c: c["profiles"]["c1"]["budgets"].update(over="x"), "profiles.c1.budgets.over", "type integer"),
        (lambda c: c["tasks"]["t2"].update(examples=7), "tasks.t2.examples", "multiple of 2"),
        (lambda c: c.update(profile="c9"), "profile", "one of ['c1']"),
        (lambda c: c["tasks"]["t1"]["quota"].update(hot=14), "tasks.t1.quota", "== queries"),
        (lambda c: c["train_speed"]["0.1b"]["gpu"].update(tokens_per_s=[[2048]]), "train_speed.0.1b.gpu.tokens_per_s",
         "[ctx, tokens a second] pairs"),
        # a value a job parses is refused when the DAG is built, not at the first job
        (lambda c: c.update(strategy="gpu fp99"), "strategy", "(fp32|fp16|bf16)"),
        (lambda c: c.update(strategy="strategy: cpu fp32"), "strategy", "^(cpu|cuda"),
    ],
)
def test_bad_values_name_the_key(base, repo, mutate, key, expected):
    cfg = copy.deepcopy(base)
    mutate(cfg)
    with pytest.raises(InputError) as info:
        validate_config(cfg, repo / "config/schema.yaml", source="config/config.yaml")
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"config/config.yaml: {key}: expected")
    assert expected in msg


def test_the_shipped_config_is_valid(repo):
    cfg = load_config(repo / "config/config.yaml", repo / "config/schema.yaml")
    assert cfg["master_seed"] == 20260807 and cfg["profiles"]["c1"]["budgets"] == {"over": 120, "sanity": 960}


def test_broken_yaml_names_the_file(tmp_path, repo):
    p = tmp_path / "c.yaml"
    p.write_text("episodes: [6\n")
    with pytest.raises(InputError, match=r"c\.yaml: <file>: expected valid YAML"):
        load_config(p, repo / "config/schema.yaml")


@pytest.mark.parametrize("strategy", ["cpu fp32", "cuda bf16", "cuda:1 fp16"])
def test_the_strategies_the_rwkv_package_takes_are_accepted(base, repo, strategy):
    cfg = copy.deepcopy(base)
    cfg["strategy"] = strategy
    assert validate_config(cfg, repo / "config/schema.yaml", source="config/config.yaml")["strategy"] == strategy
