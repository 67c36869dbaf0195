"""The published files, by path: what rules/tables.smk builds and the `published` target lists."""

from __future__ import annotations

import os

from ..core.config import merged_source
from ..core.errors import InputError

TABLES = "results/urd/tables"
FIGURES = "results/urd/figures"


def published_scales(config: dict, source: str = merged_source()) -> list[str]:
    scales = list(config["publish"]["scales"])
    unknown = [s for s in scales if s not in config["backbones"]]
    if unknown:
        raise InputError(source, "publish.scales", f"scales among backbones ({', '.join(config['backbones'])})",
                         ", ".join(unknown))
    return scales


def omitted_scales(config: dict) -> list[str]:
    return [s for s in config["backbones"] if s not in config["publish"]["scales"]]


def table_files(name: str) -> dict[str, str]:
    return {fmt: f"{TABLES}/{name}.{fmt}" for fmt in ("md", "csv", "html")} | {"caption": caption_file(name)}


def caption_file(name: str) -> str:
    return f"{TABLES}/captions/{name}.rst"


def caption_abspath(name: str) -> str:
    """Report captions are read when the report is made, relative to the rule file unless
    absolute; they are outputs of the table jobs, in the working directory."""
    return os.path.abspath(caption_file(name))


def labelled_args(flag: str, scales: list[str], pattern: str) -> list[str]:
    """['--summary', 'tiny=results/urd/tiny/summary.json', ...] for the table CLI."""
    return [arg for s in scales for arg in (f"--{flag}", f"{s}={pattern.format(scale=s)}")]


def artifact_files(config: dict, scale: str, recipe: str, tasks: list[str]) -> list[str]:
    """The tuning artifacts a control reads: state file and costs.json per evaluated transcript."""
    from ..controls.artifacts import evaluated_transcript_digests

    ctl = config["controls"]
    root = f"{ctl['artifacts']}/{scale}/{recipe}"
    return [f"{root}/{sha}/{name}" for task in tasks for sha in evaluated_transcript_digests(config, task)
            for name in (ctl["state_file"], "costs.json")]


def retention_png(scale: str) -> str:
    return f"{FIGURES}/retention_{scale}.png"


#: The published planting tables and figure (rules/planting.smk, the `published` target).
PLANTING_TABLES = {fmt: f"results/planting/tables/planting.{fmt}" for fmt in ("md", "csv", "html", "png")}
#: The published cross-store table (rules/agentmem.smk).
STORES_TABLES = {fmt: f"results/agentmem/tables/stores.{fmt}" for fmt in ("md", "csv", "html")}


def published_files(config: dict) -> list[str]:
    scales = published_scales(config)
    files = [table_files("retention")[f] for f in ("md", "csv", "html")]
    files += [table_files("side_metrics")[f] for f in ("md", "csv", "html")]
    files += [retention_png(s) for s in scales]
    if config.get("agentmem", {}).get("planting", {}).get("publish"):
        files += list(PLANTING_TABLES.values())
    if config.get("agentmem", {}).get("stores", {}).get("publish"):
        files += list(STORES_TABLES.values())
    for part in config["publish"].get("urd2", []):  # rung 2: a table a part, a figure a scale
        files += [f"{TABLES}/urd2_{part}.md", f"{TABLES}/urd2_{part}.html"]
        if part != "chains":
            files += [f"{FIGURES}/urd2_{part}_{s}.png" for s in scales]
    if config["controls"]["enabled"]:
        files += [f"{TABLES}/ceiling.md", f"{TABLES}/ceiling.html", f"{TABLES}/bits_curve.md",
                  f"{TABLES}/bits_curve.html", f"{FIGURES}/bits_curve.png"]
    return files
