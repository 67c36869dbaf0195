"""Protocol invariants on every generated episode, and byte-level determinism."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from urd.core.config import load_config
from urd.data import calibrate, t1, t2


@pytest.fixture(scope="module")
def config(repo):
    return load_config(repo / "config/config.yaml", repo / "config/schema.yaml")


@pytest.fixture(scope="module")
def t1_eps(config):
    return [calibrate.t1_episode(config, i) for i in range(config["episodes"])]


@pytest.fixture(scope="module")
def t2_eps(config):
    return [calibrate.t2_episode(config, i) for i in range(config["episodes"])]


def test_two_regenerations_are_byte_identical(config, tmp_path):
    for task in ("t1", "t2"):
        a = [p.read_bytes() for p in calibrate.write_data(config, task, tmp_path / f"a-{task}.jsonl")]
        b = [p.read_bytes() for p in calibrate.write_data(config, task, tmp_path / f"b-{task}.jsonl")]
        assert a == b and len(a) == 3 and all(len(x) > 1000 for x in a)


def test_the_regenerated_data_matches_the_committed_manifest(config, tmp_path, repo):
    from urd.core.io import sha256_file
    from urd.core.manifest import read_manifest

    pinned = read_manifest(repo / "calibration/manifest.sha256")
    written = []
    for task, rel in (("t1", "data/c1/t1.jsonl"), ("t2", "data/t2.jsonl")):
        for out in calibrate.write_data(config, task, tmp_path / rel):
            name = str(out.relative_to(tmp_path))
            assert sha256_file(out) == pinned[name], f"{name} no longer regenerates byte-for-byte"
            written.append(name)
    assert sorted(written) == sorted(pinned)  # the full data and both views of each task


def test_one_episode_alone_equals_its_line_in_the_full_file(config, tmp_path):
    big = {**config, "episodes": 40}
    lines = calibrate.episodes_text(big, "t1").splitlines()
    alone = calibrate.t1_episode(config, 3)
    assert json.loads(lines[3]) == alone
    from urd.core.io import canonical_json

    assert lines[3] == canonical_json(alone)
    # ... and episode 3 does not depend on how many are generated.
    assert calibrate.episodes_text({**config, "episodes": 4}, "t2").splitlines()[3] == calibrate.episodes_text(big, "t2").splitlines()[3]


def test_episodes_differ_from_each_other(t1_eps, t2_eps):
    assert len({e["transcript"] for e in t1_eps}) == len(t1_eps)
    assert len({e["transcript"] for e in t2_eps}) == len(t2_eps)


def test_t1_invariants(t1_eps):
    for ep in t1_eps:
        pairs = ep["pairs"]
        assert len(pairs) == 64 and len({p["key"] for p in pairs}) == 64
        for p in pairs:
            assert len(p["value"]) == 12 and set(p["value"]) <= set(t1.ALPHABET)
        assert len(t1.ALPHABET) == 32 == len(set(t1.ALPHABET))
        assert len(ep["lines"]) == 96
        shown = Counter(re.search(r"code for (\w+) is", line).group(1) for line in ep["lines"])
        hot = {p["key"] for p in pairs if p["hot"]}
        assert len(hot) == 8 and all(shown[k] == 5 for k in hot)
        assert all(shown[p["key"]] == 1 for p in pairs if not p["hot"])
        kinds = Counter(q["kind"] for q in ep["queries"])
        assert kinds == {"hot": 15, "cold": 5, "unseen": 5}
        values = {p["key"]: p["value"] for p in pairs}
        for q in ep["queries"]:
            if q["kind"] == "unseen":
                assert q["key"] not in values and q["expected"] is None
                assert q["key"] not in ep["transcript"], "an unseen key was exposed"
            else:
                assert q["expected"] == values[q["key"]]
                assert (q["key"] in hot) == (q["kind"] == "hot")
        # every hot key is asked at least once; none more than twice
        hot_asks = Counter(q["key"] for q in ep["queries"] if q["kind"] == "hot")
        assert set(hot_asks) == hot and max(hot_asks.values()) == 2
        assert len({q["id"] for q in ep["queries"]}) == 25


def test_t2_invariants(t2_eps):
    for ep in t2_eps:
        marker, cat = ep["rule"]["marker"], ep["rule"]["category"]
        assert len(ep["examples"]) == 8
        assert sum(e["trigger"] for e in ep["examples"]) == 4
        kinds = Counter(q["kind"] for q in ep["queries"])
        assert kinds == {"trigger": 12, "non_trigger": 12}
        taught = {e["item"] for e in ep["examples"]}
        for q in ep["queries"]:
            assert q["item"] not in taught, "a query item was taught"
            assert (q["item"] in t2.CATEGORIES[cat]) == (q["kind"] == "trigger")
            assert t2.applied(q["expected"], marker) == (q["kind"] == "trigger")
        for e in ep["examples"]:
            assert t2.applied(e["reply"], marker) == e["trigger"]
        # the rule is never stated: the category name does not appear in the session
        assert cat not in ep["transcript"]
        assert 400 <= len(ep["transcript"].encode()) <= 600


def test_t2_application_is_detected_mechanically():
    assert t2.applied("Logged: pear. ~kv", "~kv")
    assert t2.applied("  ~kv Logged: pear.\nmore", "~kv")
    assert not t2.applied("Logged: pear.", "~kv")
    assert not t2.applied("Logged: pear. ~kvx", "~kv")  # a longer token is not the marker
    assert not t2.applied("Logged: pear.\n~kv", "~kv")  # only the reply's first line counts
    assert not t2.applied("", "~kv")
