"""The JSON files a table is built from, with the digest of each, and the provenance lines
(and report captions) that name them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import InputError
from ..core.io import sha256_bytes


@dataclass(frozen=True)
class Source:
    label: str      # the scale, for a per-scale file
    path: str
    sha256: str     # of the file's bytes, as read
    data: dict

    @property
    def commit(self) -> str | None:
        return self.data.get("provenance", {}).get("commit")

    def line(self) -> str:
        prov = self.data.get("provenance", {})
        parts = [f"{self.label}: {self.path} sha256 {self.sha256}"]
        if prov.get("commit"):
            parts.append(f"built at commit {prov['commit']}")
        if prov.get("checkpoint"):
            parts.append(f"checkpoint {prov['checkpoint']}"
                         + (f" (sha256 {prov['checkpoint_sha256']})" if prov.get("checkpoint_sha256") else ""))
        box = prov.get("sandbox")
        if box:
            parts.append(sandbox_line(box))
        return ", ".join(parts)


def sandbox_line(box: dict | str) -> str:
    """Whether the jobs behind a summary (or one job: a label) ran in the sandbox (urd.workflow.sandbox)."""
    if isinstance(box, str):
        return "its job sandboxed (bwrap)" if box == "bwrap" else f"NOT sandboxed ({box})"
    if box.get("all_sandboxed"):
        return "every job sandboxed (bwrap)"
    labels = ", ".join(f"{n} x {lab}" for lab, n in box.get("cells", {}).items())
    head = "MIXED: some jobs sandboxed, some not" if box.get("mixed") else "NOT sandboxed"
    return f"{head} (summary: {box.get('summary')}; cells and controls: {labels or 'unlabelled'})"


def load(path: str | Path, label: str | None = None) -> Source:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(str(path), "file", "an existing JSON file", "missing") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(str(path), "content", "JSON", str(exc)) from None
    return Source(label or data.get("scale") or path.stem, str(path), sha256_bytes(raw), data)


def parse_labelled(items: list[str]) -> list[Source]:
    """['tiny=results/urd/tiny/summary.json', ...] -> sources, in the order given."""
    out = []
    for item in items:
        label, sep, path = item.partition("=")
        if not sep or not label or not path:
            raise InputError("command line", "--summary/--control", "LABEL=PATH", item)
        out.append(load(path, label))
    labels = [s.label for s in out]
    if len(set(labels)) != len(labels):
        raise InputError("command line", "labels", "each scale once", ", ".join(labels))
    return out


def caption_rst(title: str, description: str, sources: list[Source], built_at: str | None,
                extra: list[str] | None = None) -> str:
    """A report caption (reStructuredText) stating what the output was built from."""
    lines = [f"**{_rst(title)}**", "", _rst(description), "", "Provenance:", ""]
    for s in sources:
        lines.append(f"- {_rst(s.line())}")
    lines.append(f"- table code at commit {built_at or 'unknown (not a git checkout)'}")
    for e in extra or []:
        lines.append(f"- {_rst(e)}")
    return "\n".join(lines) + "\n"


def _rst(text: str) -> str:
    # The caption goes through Jinja, then docutils: keep both inert.
    text = text.replace("{", "(").replace("}", ")")
    for ch in "\\*`_|":
        text = text.replace(ch, "\\" + ch)
    return text
