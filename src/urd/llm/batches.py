"""The journal of a target's Message Batches: one file a batch, beside the replay cache.

A batch is billed whether or not anyone reads it, and can take up to a day. Its journal is
written before the batch is sent (``pending-…``, the sends already in the ledger) and again,
under the batch's id, as soon as the API has given one, so a process that dies while polling
leaves a batch that the next run of the target resumes instead of paying for twice. Each entry
keeps its requests whole, so the batch can be resumed or cancelled without the suite that made it.
"""

from __future__ import annotations

import datetime
import json
import uuid
from pathlib import Path

from ..core.errors import InputError
from ..core.io import atomic_write_json
from .request import Request

OPEN = ("pending", "in_progress")


class BatchJournal:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def pending(self, ledger: Path, items: dict[str, dict], marker: str = "") -> Path:
        """Written before the batch is created: if the process dies before the id comes back (or
        the create's answer is lost), the batch may exist; this file says so, with when (a batch
        made after it, of its size, carrying its custom ids, is adopted) and the custom ids'
        marker. Its sends stay in the ledger at their worst case until then."""
        path = self.root / f"pending-{uuid.uuid4().hex[:12]}.json"
        now = datetime.datetime.now(datetime.UTC).isoformat()
        atomic_write_json(path, {"id": None, "state": "pending", "ledger": str(ledger), "items": items,
                                 "created_after": now, "marker": marker})
        return path

    def created(self, pending: Path, batch_id: str) -> dict:
        record = self._read(pending)
        record.update(id=batch_id, state="in_progress")
        atomic_write_json(self.path(batch_id), record)
        pending.unlink()
        return record

    def close(self, record: dict, state: str) -> None:
        record["state"] = state
        atomic_write_json(self.path(record["id"]), record)

    def path(self, batch_id: str) -> Path:
        return self.root / f"{batch_id}.json"

    def find(self, batch_id: str) -> dict:
        path = self.path(batch_id)
        if not path.exists():
            raise InputError(path, "batch", f"the journal of batch {batch_id} under {self.root}", "no such file")
        return self._read(path)

    def open_records(self, ledger: Path | None = None) -> list[dict]:
        """Every batch not yet read to its end (of one ledger's target, when given), oldest first."""
        out = []
        for path in sorted(self.root.glob("*.json")) if self.root.is_dir() else []:
            record = self._read(path)
            if record["state"] in OPEN and (ledger is None or Path(record["ledger"]) == Path(ledger)):
                out.append({**record, "journal": str(path)})
        return out

    @staticmethod
    def requests(record: dict) -> dict[str, tuple[str, Request]]:
        """The journal's items as ``custom_id -> (model, Request)``."""
        out = {}
        for cid, item in record["items"].items():
            ident = item["request"]
            out[cid] = (ident["model"], Request(ident["purpose"], ident["system"], ident["user"], ident["max_tokens"],
                                                ident["replica"]))
        return out

    @staticmethod
    def _read(path: Path) -> dict:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            missing = [k for k in ("id", "state", "ledger", "items") if k not in record]
            if missing:
                raise KeyError(missing[0])
            return record
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(path, "batch journal", "a journal written by urd", str(exc)) from None
