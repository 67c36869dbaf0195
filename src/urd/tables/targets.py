"""The published files, by path: what rules/tables.smk builds and the `published` target lists."""

from __future__ import annotations

from ..errors import InputError

TABLES = "results/urd/tables"
FIGURES = "results/urd/figures"


def published_scales(config: dict, source: str = "config/config.yaml (+ --config)") -> list[str]:
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


def retention_png(scale: str) -> str:
    return f"{FIGURES}/retention_{scale}.png"


def published_files(config: dict) -> list[str]:
    scales = published_scales(config)
    files = [table_files("retention")[f] for f in ("md", "csv", "html")]
    files += [table_files("side_metrics")[f] for f in ("md", "csv", "html")]
    files += [retention_png(s) for s in scales]
    if config["controls"]["enabled"]:
        files += [f"{TABLES}/ceiling.md", f"{TABLES}/ceiling.html", f"{TABLES}/bits_curve.md",
                  f"{TABLES}/bits_curve.html", f"{FIGURES}/bits_curve.png"]
    return files
