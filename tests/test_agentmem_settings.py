"""config/agentmem.yaml and its schema: one top-level key, no unknown keys, named errors."""


import pytest
import yaml
from conftest import REPO

from urd.core.errors import InputError
from urd.stores import settings as settings_mod


def test_the_defaults_validate_under_one_top_level_key():
    doc = yaml.safe_load((REPO / "config/agentmem.yaml").read_text())
    assert list(doc) == ["agentmem"]
    s = settings_mod.validate(doc["agentmem"], "config/agentmem.yaml")
    assert s.runs == {"move": 3, "trip-alone": 2} and s.read_at.isoformat() == "2026-10-13" and not s.confirm_live
    assert set(s.max_tokens) == {"extract", "contradiction", "update", "update_confirm", "reanchor", "reanchor_check",
                                 "decide", "summarize", "judge", "reply"}


def test_unknown_keys_and_bad_values_name_the_field():
    raw = yaml.safe_load((REPO / "config/agentmem.yaml").read_text())["agentmem"]
    with pytest.raises(InputError, match=r"agentmem: .*'surprise' was unexpected"):
        settings_mod.validate({**raw, "surprise": 1}, "cfg")
    with pytest.raises(InputError, match=r"agentmem\.trip_vs_move\.gate"):
        settings_mod.validate({**raw, "trip_vs_move": {**raw["trip_vs_move"], "gate": "nightly"}}, "cfg")
    with pytest.raises(InputError, match=r"agentmem\.llm\.pins"):
        settings_mod.validate({**raw, "llm": {**raw["llm"], "pins": {"summarise": "m"}}}, "cfg")


def test_the_command_line_string_form_of_the_confirmation_is_accepted():
    raw = yaml.safe_load((REPO / "config/agentmem.yaml").read_text())["agentmem"]
    s = settings_mod.validate({**raw, "spend": {**raw["spend"], "confirm_live": "true"}}, "--config")
    assert s.confirm_live is True
