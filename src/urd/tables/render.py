"""A small document model rendered to Markdown, HTML and CSV from the same blocks.

Tables are built once as a list of blocks (headings, paragraphs, bullet lists, tables) and
written in every format from that list, so the Markdown a reader diffs and the HTML the report
shows cannot disagree. Output is deterministic: no dates, no environment-dependent text.
"""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass, field


@dataclass
class Doc:
    title: str
    blocks: list[tuple] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> Doc:
        self.blocks.append(("h", level, text))
        return self

    def para(self, text: str) -> Doc:
        self.blocks.append(("p", text))
        return self

    def bullets(self, items: list[str]) -> Doc:
        self.blocks.append(("ul", list(items)))
        return self

    def table(self, header: list[str], rows: list[list[str]], align: str | None = None) -> Doc:
        """align: one character per column, 'l' or 'r' (default: first left, the rest right)."""
        align = align or "l" + "r" * (len(header) - 1)
        if len(align) != len(header) or any(len(r) != len(header) for r in rows):
            raise ValueError("every row and the alignment must have one entry per column")
        self.blocks.append(("table", list(header), [list(r) for r in rows], align))
        return self

    # --- renderers -------------------------------------------------------------------------
    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for block in self.blocks:
            kind = block[0]
            if kind == "h":
                out += ["#" * block[1] + " " + block[2], ""]
            elif kind == "p":
                out += [block[1], ""]
            elif kind == "ul":
                out += [f"- {item}" for item in block[1]] + [""]
            else:
                _, header, rows, align = block
                out.append("| " + " | ".join(_md_cell(h) for h in header) + " |")
                out.append("|" + "|".join(":---" if a == "l" else "---:" for a in align) + "|")
                out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
                out.append("")
        return "\n".join(out).rstrip("\n") + "\n"

    def html(self) -> str:
        e = html.escape
        body = [f"<h1>{e(self.title)}</h1>"]
        for block in self.blocks:
            kind = block[0]
            if kind == "h":
                body.append(f"<h{block[1]}>{e(block[2])}</h{block[1]}>")
            elif kind == "p":
                body.append(f"<p>{e(block[1])}</p>")
            elif kind == "ul":
                body.append("<ul>" + "".join(f"<li>{e(i)}</li>" for i in block[1]) + "</ul>")
            else:
                _, header, rows, align = block
                style = {"l": "left", "r": "right"}
                head = "".join(f'<th style="text-align:{style[a]}">{e(h)}</th>' for h, a in zip(header, align))
                trs = "".join(
                    "<tr>" + "".join(f'<td style="text-align:{style[a]}">{e(c)}</td>' for c, a in zip(r, align)) + "</tr>"
                    for r in rows
                )
                body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{trs}</tbody></table>")
        return (
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{e(self.title)}</title><style>{_CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n"
        )


_CSS = (
    "body{font-family:sans-serif;margin:1.5em;max-width:80em}"
    "table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "th,td{border:1px solid #bbb;padding:0.25em 0.6em;font-variant-numeric:tabular-nums}"
    "th{background:#eee}"
)


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def csv_text(header: list[str], rows: list[list]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else v for v in row])
    return buf.getvalue()


# --- number formats ------------------------------------------------------------------------
def pct(x: float | None, digits: int = 1) -> str:
    """0.3 -> '30.0 %'; None -> 'n/a'. Negative zero prints as 0."""
    if x is None:
        return "n/a"
    v = round(100 * x, digits)
    return f"{v + 0.0:.{digits}f} %"


def pct_interval(low: float | None, high: float | None, digits: int = 1) -> str:
    if low is None or high is None:
        return ""
    lo, hi = round(100 * low, digits) + 0.0, round(100 * high, digits) + 0.0
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def size_label(n: int | None) -> str:
    """Budgets as the write-up names them: 120 B, 4 KB (= 4096 B), 1 MB (= 1048576 B)."""
    if n is None:
        return "full"
    for unit, mult in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult} {unit}"
    return f"{n} B"


def rounded(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else round(float(x), digits) + 0.0
