"""One run target's spend, across every process that works on it: an append-only ledger.

A live call is written down *before* it is sent (``send``: its worst case) and settled after
(``settle``: what the API billed, which may be several lost replies and an answer, or nothing),
with the reply, before the replay cache or anything else sees it: a process killed after the
bill is written loses nothing it paid for.
A process killed between the two leaves a send without a settlement: the call may have been
billed, so it counts at its worst case for as long as the ledger lives. The ceiling is checked
against everything committed (billed plus in flight), so reruns of one target together never
pass it; and it is checked again under the file's lock, after reading what other processes
appended since, in the same step that writes the send (``send(..., ceiling_usd=...)``), so two
processes on one target at once never pass it either.

Each entry is one line, appended and flushed to disk before the reply is used. A kill while
appending can only tear the last line; a torn last line is dropped on reading (a torn send was
never sent; a torn settlement leaves its call in flight, counted at its worst case). Any other
line that does not parse is an error naming the line.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from ..core.errors import InputError
from ..core.io import canonical_json
from .request import Completion
from .usage import Usage

VERSION = 1


@dataclass(frozen=True)
class Bill:
    """One billed reply: ``answered`` (usable), ``failed`` (billed but unusable: empty, refused, an
    errored batch item the API billed) or ``lost`` (cut mid-body: its usage never arrived, so it is
    counted at the call's worst case)."""

    kind: str
    cost_usd: float
    model: str = ""
    usage: Usage | None = None
    batched: bool = False
    reply: Completion | None = None  # an answered bill keeps its reply, so a kill before the cache has it loses nothing

    def as_dict(self) -> dict:
        out = {"kind": self.kind, "cost_usd": round(self.cost_usd, 9), "model": self.model, "batched": self.batched}
        out["usage"] = None if self.usage is None else asdict(self.usage)
        if self.reply is not None:
            out["reply"] = {"text": self.reply.text, "truncated": self.reply.truncated}
        return out


class OverCeiling(Exception):
    """A send the ceiling cannot hold, decided under the ledger's lock (nothing was written)."""

    def __init__(self, committed: float, worst: float, ceiling: float) -> None:
        self.committed, self.worst, self.ceiling = committed, worst, ceiling
        super().__init__(f"committed US${committed:.4f} + worst case US${worst:.4f} > ceiling US${ceiling:g}")


class SpendLedger:
    def __init__(self, path: str | os.PathLike | None) -> None:
        self.path = None if path is None else Path(path)  # None: kept in memory (a scripted run)
        self._sends: dict[str, dict] = {}
        self._settled: dict[str, list[dict]] = {}
        self._paid: dict[tuple[str, str], dict] = {}  # (run, cache key) -> the answered bill that paid for it
        self._replies: dict[str, dict] = {}  # cache key -> an answered bill, of any run
        self._n = 0
        self._offset = 0  # bytes of the file applied so far (what other processes add comes after)
        if self.path is not None and self.path.exists():
            self._load()

    # --- reading --------------------------------------------------------------------------------
    def _load(self) -> None:
        data = self.path.read_bytes()
        whole = data[: data.rfind(b"\n") + 1]  # a torn last line: see the module's note
        self._offset = len(whole)
        for n, raw in enumerate(whole.splitlines(), 1):
            if not raw.strip():
                continue
            try:
                self._apply(json.loads(raw))
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{self.path}:{n}", "entry", "a ledger entry written by urd", str(exc)) from None

    def _apply(self, entry: dict) -> None:
        op = entry["op"]
        if op == "send":
            self._sends[entry["id"]] = entry
        elif op == "settle":
            send = self._sends[entry["id"]]
            self._settled[entry["id"]] = entry["bills"]
            for bill in entry["bills"]:
                if bill["kind"] == "answered":
                    self._paid.setdefault((send["run"], send["key"]), bill)
                    self._replies.setdefault(send["key"], bill)
        else:
            raise KeyError(f"op {op!r}")

    @property
    def billed_usd(self) -> float:
        return sum(b["cost_usd"] for bills in self._settled.values() for b in bills)

    def answered_usd_for(self, run: str) -> float:
        """What the runs with fingerprint ``run`` paid for replies they can replay (lost and failed
        replies are asked again, so they are not among them)."""
        return sum(b["cost_usd"] for i, bills in self._settled.items() if self._sends[i]["run"] == run
                   for b in bills if b["kind"] == "answered")

    def billed_usd_for(self, run: str) -> float:
        """Everything the runs with fingerprint ``run`` were billed: the replies they used, and the
        ones paid for and never used (lost on the wire and asked again, failed, batch items a run
        stopped before reading into its numbers)."""
        return sum(b["cost_usd"] for i, bills in self._settled.items() if self._sends[i]["run"] == run for b in bills)

    def in_flight(self) -> list[dict]:
        """Calls sent and never settled: by a process that died (or this one, mid-call)."""
        return [s for i, s in self._sends.items() if i not in self._settled]

    @property
    def committed_usd(self) -> float:
        """What the target has spent or may have spent: billed, plus in-flight calls at worst case."""
        return self.billed_usd + sum(s["worst_usd"] for s in self.in_flight())

    def worst_usd(self, send_id: str) -> float:
        """The worst case a send was written down at."""
        return float(self._sends[send_id]["worst_usd"])

    def settled(self, send_id: str) -> bool:
        return send_id in self._settled

    def paid(self, run: str, key: str) -> dict | None:
        """The answered bill that paid for the reply under cache key ``key`` in a run of this target
        with the fingerprint ``run`` (the same settings and routes), if one did."""
        return self._paid.get((run, key))

    def reply(self, key: str) -> Completion | None:
        """The reply this target was billed for under cache key ``key``, from any of its runs."""
        bill = self._replies.get(key)
        if bill is None or "reply" not in bill:
            return None
        return Completion(text=bill["reply"]["text"], model=bill["model"], usage=Usage(**bill["usage"]),
                          truncated=bill["reply"]["truncated"])

    def summary(self) -> dict:
        bills = [b for bills in self._settled.values() for b in bills]
        flying = self.in_flight()
        return {
            "file": None if self.path is None else self.path.name,
            "billed_usd": round(self.billed_usd, 6),
            "billed_replies": len(bills),
            "lost_replies": sum(b["kind"] == "lost" for b in bills),
            "in_flight": len(flying),
            "in_flight_worst_usd": round(sum(s["worst_usd"] for s in flying), 6),
        }

    # --- writing --------------------------------------------------------------------------------
    def send(self, run: str, key: str, purpose: str, model: str, worst_usd: float, *, batch: str | None = None,
             ceiling_usd: float | None = None) -> str:
        """Write down a call of the run ``run`` about to be sent; returns its id for :meth:`settle`.
        With ``ceiling_usd``: only if, with every process's entries read under the lock, the
        committed spend plus this worst case stays within it (else OverCeiling, nothing written)."""
        self._n += 1
        entry = {"op": "send", "id": f"{os.getpid()}-{self._n}-{os.urandom(3).hex()}", "run": run, "key": key,
                 "purpose": purpose, "model": model, "worst_usd": round(worst_usd, 9), "batch": batch, "v": VERSION}
        self._append(entry, ceiling_usd)
        return entry["id"]

    def settle(self, send_id: str, bills: list[Bill]) -> None:
        """What the API billed for the call ``send_id`` (nothing, when it answered with an error)."""
        self._append({"op": "settle", "id": send_id, "bills": [b.as_dict() for b in bills]})

    def _over(self, entry: dict, ceiling_usd: float | None) -> None:
        if ceiling_usd is not None and entry["op"] == "send" and self.committed_usd + entry["worst_usd"] > ceiling_usd:
            raise OverCeiling(self.committed_usd, entry["worst_usd"], ceiling_usd)

    def _append(self, entry: dict, ceiling_usd: float | None = None) -> None:
        if self.path is None:
            self._over(entry, ceiling_usd)
            self._apply(entry)
            return
        line = (canonical_json(entry) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":  # a line torn by a kill: cut it off first
                data = os.pread(fd, size, 0)
                size = data.rfind(b"\n") + 1
                os.ftruncate(fd, size)
            if size > self._offset:  # what other processes appended since: read it before deciding
                for raw in os.pread(fd, size - self._offset, self._offset).splitlines():
                    if raw.strip():
                        self._apply(json.loads(raw))
                self._offset = size
            self._over(entry, ceiling_usd)
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            self._offset += len(line)
        finally:
            os.close(fd)
        self._apply(entry)
