"""A line for the person running the workflow, not only for the job's log.

A job's standard error goes to its log (urd.workflow.job.run), and Snakemake shows a log only
when the job fails. What a job that succeeds must still tell (a store's run ended incomplete, a
study stopped at its gate) is printed with `notice`: marked in the log, and copied by the job's
wrapper, once the command ends, to Snakemake's own output, where the user is looking.
"""

from __future__ import annotations

import sys

MARK = "urd notice: "


def notice(line: str) -> None:
    print(MARK + line, file=sys.stderr, flush=True)


def marked(text: str) -> list[str]:
    """The notices in a log's text, without their mark."""
    return [ln[len(MARK):] for ln in text.splitlines() if ln.startswith(MARK)]
