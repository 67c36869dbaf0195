"""Rerun digests come from the import closure of a job's entry module, plug-ins included."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

from urd.core.provenance import code_closure, code_digest


@pytest.fixture()
def plugin_dir(tmp_path, monkeypatch):
    (tmp_path / "my_plugin.py").write_text(textwrap.dedent("""
        import numpy  # installed: pinned by version, not digested
        from urd.systems.base import MemorySystem

        def helper():
            from my_helpers import shorten  # a function-level import still counts
            return shorten
    """))
    (tmp_path / "my_helpers.py").write_text("def shorten(x):\n    return x[:10]\n")
    (tmp_path / "unrelated.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    code_closure.cache_clear()
    yield tmp_path
    code_closure.cache_clear()


def keys(*entries):
    return [k for k, _ in code_closure(*entries)]


def test_a_plugin_closure_holds_its_helpers_and_the_package_modules_it_imports(plugin_dir):
    got = keys("my_plugin")
    assert {"my_plugin.py", "my_helpers.py", "urd/systems/base.py", "urd/systems/__init__.py", "urd/__init__.py"} <= set(got)
    assert "unrelated.py" not in got and not any(k.startswith("numpy") for k in got)
    assert "my_plugin" not in sys.modules and "my_helpers" not in sys.modules  # read, never imported


def test_editing_a_module_changes_exactly_the_digests_that_reach_it(plugin_dir):
    plugin_cell = code_digest("urd.harness.run", "my_plugin")
    builtin_cell = code_digest("urd.harness.run", "urd.systems.vanilla")
    with open(plugin_dir / "my_helpers.py", "a") as fh:
        fh.write("# edited\n")
    code_closure.cache_clear()
    assert code_digest("urd.harness.run", "my_plugin") != plugin_cell
    assert code_digest("urd.harness.run", "urd.systems.vanilla") == builtin_cell


def test_the_runner_closure_follows_lazy_imports_and_not_the_systems_it_names_by_string():
    got = keys("urd.harness.run")
    # cmd_consolidate imports the runner inside the function; the runner reaches the batch decoder
    assert {"urd/harness/runner.py", "urd/backbone/batch.py", "urd/data/views.py"} <= set(got)
    # the registry names built-in systems by string: each cell adds its own system module
    assert "urd/systems/summary.py" not in got and "urd/systems/summary.py" in keys("urd.harness.run", "urd.systems.summary")
    assert "urd/tables/retention.py" not in got


def test_package_data_read_at_run_time_is_digested():
    got = keys("urd.agentmem.__main__")
    assert "urd/agentmem/data/scripted_table.json" in got and any(k.startswith("urd/data/agentmem/notes/") for k in got)
    assert any(k.startswith("urd/data/agentmem/pairs/") for k in got)
    assert "urd/llm/client.py" in got


def test_an_unknown_entry_is_an_error_naming_it():
    with pytest.raises(ModuleNotFoundError, match="no module named 'urd.nosuch'"):
        code_digest("urd.nosuch")


def test_digesting_every_entry_imports_no_model_code():
    entries = ["urd.harness.run", "urd.data.oracle", "urd.harness.summarize", "urd.replay.tune", "urd.controls.__main__",
               "urd.tables.__main__", "urd.agentmem.__main__", "urd.data.calibrate", "urd.core.verify"]
    probe = f"import sys, urd.core.provenance as p; [p.code_digest(e) for e in {entries!r}]; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"



def test_a_library_inside_a_plugins_folder_is_never_followed(plugin_dir, monkeypatch):
    import urd.core.provenance as prov

    # as when a workflow folder holding my_systems.py also holds the .venv: numpy's files lie
    # below the plug-in's folder, and are still pinned by version, not digested
    monkeypatch.setattr(prov, "_INSTALLED", {*prov._INSTALLED, plugin_dir / "site"})
    lib = plugin_dir / "site" / "somelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(plugin_dir / "site"))
    (plugin_dir / "uses_lib.py").write_text("import somelib\nfrom urd.core import rng\n")
    importlib.invalidate_caches()
    code_closure.cache_clear()
    got = keys("uses_lib")
    assert "uses_lib.py" in got and "urd/core/rng.py" in got and not any("somelib" in k for k in got)


def test_a_plugin_in_a_folder_without_init_is_digested(plugin_dir):
    (plugin_dir / "plugs").mkdir()
    (plugin_dir / "plugs" / "my_sys.py").write_text("from plugs import helper\n")
    (plugin_dir / "plugs" / "helper.py").write_text("Y = 2\n")
    importlib.invalidate_caches()
    code_closure.cache_clear()
    assert {"plugs/my_sys.py", "plugs/helper.py"} <= set(keys("plugs.my_sys"))


def test_a_tuning_job_digests_the_tuning_code_and_not_the_harness_or_rung2():
    """A tuning job's code digest (rules/replay.smk) reaches only what tuning runs: an edit to the
    harness, the systems or rung 2 must not rerun the GPU jobs."""
    got = keys("urd.replay.tune")
    assert "urd/replay/recipe.py" in got and "urd/replay/tune.py" in got
    assert not [k for k in got if k.startswith(("urd/harness/", "urd/rung2/", "urd/systems/", "urd/controls/"))], got
