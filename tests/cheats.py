"""Memory systems that try to break the benchmark's promise (tests/test_boundary.py).

Each is a plug-in as a user would write one from the README; the harness must catch it.
"""

from __future__ import annotations

import hashlib
import re
import typing

from urd.systems.base import MemorySystem

_KEY = re.compile(r"under (\w+)\?")
_RECORD = re.compile(r"the code for (\w+) is (\w+)\.")


class Stash(MemorySystem):
    """Keeps the whole transcript on the instance (and the class), carries 0 bytes, and looks
    the answer up in session B."""

    name = "stash"
    kept: typing.ClassVar[dict] = {}  # shared on purpose: the cheat keeps the transcript on the class

    def consolidate(self, transcript, budget_bytes):
        found = dict(_RECORD.findall(transcript))
        self.kept.update(found)
        type(self).kept.update(found)
        return b""

    def answer(self, fiche, query, header):
        m = _KEY.search(query)
        return self.kept.get(m.group(1), "NONE") if m else "NONE"


class MeterReset(MemorySystem):
    """Reads the transcript through the model, then zeroes the meter and declares nothing."""

    name = "meter_reset"

    def consolidate(self, transcript, budget_bytes):
        self.backbone.prefill(self.backbone.tokenizer.encode(transcript))
        self.backbone.tokens_processed = 0
        return b""

    def answer(self, fiche, query, header):
        return "NONE"


class RawForward(MemorySystem):
    """Runs the package's forward directly, off the meter."""

    name = "raw_forward"

    def consolidate(self, transcript, budget_bytes):
        self.backbone.model.forward(self.backbone.tokenizer.encode(transcript), None)
        return b""

    def answer(self, fiche, query, header):
        return "NONE"


class Weightless(bytes):
    def __len__(self):
        return 0


class Featherweight(MemorySystem):
    """Returns the whole transcript in a bytes subclass that claims to be empty."""

    name = "featherweight"

    def consolidate(self, transcript, budget_bytes):
        return Weightless(transcript.encode())

    def answer(self, fiche, query, header):
        return "NONE"


class LooseBatch(MemorySystem):
    """Consolidates a cell at once, reads every transcript through the model outside any
    episode's scope, and declares nothing."""

    name = "loose_batch"

    def consolidate(self, transcript, budget_bytes):
        return b""

    def consolidate_batch(self, transcripts, budget_bytes):
        for t in transcripts:
            self.backbone.prefill(self.backbone.tokenizer.encode(t))
        return [(b"", 0) for _ in transcripts]

    def answer(self, fiche, query, header):
        return "NONE"


class Exfiltrate(MemorySystem):
    """Carries 0 bytes and tries every way around the boundary the disk and the network offer
    (tests/test_workflow_sandbox.py). Session A leaves the codes in /tmp, in $HOME, beside its
    fiches and with a loopback server (port in URD_ATTACK_PORT); session B looks there, and in
    session A's view, the full episodes and other cells' outputs. Each channel's outcome is one
    line of the job's log; the replies come from whatever was found."""

    name = "exfiltrate"
    CHANNELS = ("tmp", "home", "beside_fiches", "socket", "session_a_view", "episodes", "other_cells", "checkpoint")

    @staticmethod
    def _out_folder(flag: str):
        import sys
        from pathlib import Path

        return Path(sys.argv[sys.argv.index(flag) + 1]).parent if flag in sys.argv else None

    def _stashes(self):
        import os
        from pathlib import Path

        port = os.environ["URD_ATTACK_PORT"]  # one test's stash, never another's
        return {"tmp": Path(f"/tmp/urd-exfiltrate-{port}.json"), "home": Path(os.path.expanduser("~/.urd-exfiltrate.json")),
                "beside_fiches": (self._out_folder("--out") or self._out_folder("--fiches") or Path(".")) / "stash.json"}

    def _report(self, channel, outcome):
        import sys

        print(f"exfiltrate {channel}: {outcome}", file=sys.stderr, flush=True)

    def _socket(self, payload: bytes | None) -> dict:
        import json
        import os
        import socket

        with socket.create_connection(("127.0.0.1", int(os.environ["URD_ATTACK_PORT"])), timeout=3) as s:
            s.sendall(b"PUT " + payload if payload is not None else b"GET")
            s.shutdown(socket.SHUT_WR)
            data = b"".join(iter(lambda: s.recv(65536), b""))
        return json.loads(data or b"{}")

    def consolidate(self, transcript, budget_bytes):
        import json

        codes = json.dumps(dict(_RECORD.findall(transcript)), sort_keys=True)
        for channel, path in self._stashes().items():
            try:
                prior = json.loads(path.read_text()) if path.exists() else {}
                path.write_text(json.dumps({**prior, **json.loads(codes)}))
                self._report(f"write {channel}", "ok")
            except OSError as exc:
                self._report(f"write {channel}", f"error {type(exc).__name__}")
        try:
            self._socket(codes.encode())
            self._report("write socket", "ok")
        except OSError as exc:
            self._report("write socket", f"error {type(exc).__name__}")
        return b""

    def _found(self) -> dict:
        import glob
        import json

        if hasattr(self, "_codes"):
            return self._codes
        codes = {}
        reads = {channel: (lambda p=path: json.loads(p.read_text())) for channel, path in self._stashes().items()}
        reads["socket"] = lambda: self._socket(None)
        reads["session_a_view"] = lambda: {k: v for f in glob.glob("data/**/*.session_a.jsonl", recursive=True)
                                           for line in open(f) for k, v in _RECORD.findall(json.loads(line)["transcript"])} \
            or _missing("data/*/t1.session_a.jsonl")
        reads["episodes"] = lambda: {q["key"]: q["expected"] for f in glob.glob("data/*/t1.jsonl")
                                     for line in open(f) for q in json.loads(line)["queries"] if q.get("key")} \
            or _missing("data/*/t1.jsonl")
        reads["other_cells"] = lambda: {r["query_id"]: r["expected"] for f in glob.glob("results/urd/**/responses.jsonl",
                                                                                         recursive=True)
                                        for r in map(json.loads, open(f))} or _missing("results/urd/**/responses.jsonl")
        reads["checkpoint"] = lambda: {"<weights>": str(len(_read_checkpoint()))}
        for channel in self.CHANNELS:
            try:
                got = reads[channel]()
                codes.update({k: v for k, v in got.items() if not k.startswith("t1-")})
                self._report(f"read {channel}", f"found {len(got)}")
            except (OSError, ValueError) as exc:
                self._report(f"read {channel}", f"error {type(exc).__name__}")
        self._codes = codes
        return codes

    def answer(self, fiche, query, header):
        m = _KEY.search(query)
        return self._found().get(m.group(1), "NONE") if m else "NONE"


def _missing(pattern: str):
    raise FileNotFoundError(pattern)


def _read_checkpoint() -> bytes:
    """The weights' first bytes, to run them off the meter: at their path, or through a
    descriptor the process still holds."""
    import glob
    import os

    fds = [f"/proc/self/fd/{fd}" for fd in os.listdir("/proc/self/fd")]
    found = glob.glob("models/**/*.pth", recursive=True) + [
        f for f in fds if os.path.realpath(f).endswith(".pth") and os.path.isfile(f)]
    if not found:
        _missing("models/*.pth")
    with open(found[0], "rb") as f:
        return f.read(1 << 16)


class ChainReread(MemorySystem):
    """Rung 2: carries nothing across a chain's boundaries and, answering after boundary k,
    looks every key up in the chain's session files on disk (every session's session-A view and
    full data, tests/test_workflow_urd2.py), and reaches for the checkpoint. Each file's outcome is one line of the job's log."""

    name = "chain_reread"

    @staticmethod
    def _reread() -> dict:
        import sys
        from pathlib import Path

        found = {}
        root = Path("data/urd2/chains/t1")
        for path in [root / f"s{k}{side}.jsonl" for k in (1, 2, 3) for side in ("", ".session_a")]:
            try:
                found.update(_RECORD.findall(path.read_text()))
                print(f"chain_reread {path}: found", file=sys.stderr, flush=True)
            except OSError as exc:
                print(f"chain_reread {path}: error {type(exc).__name__}", file=sys.stderr, flush=True)
        try:
            _read_checkpoint()
            print("chain_reread checkpoint: found", file=sys.stderr, flush=True)
        except OSError as exc:
            print(f"chain_reread checkpoint: error {type(exc).__name__}", file=sys.stderr, flush=True)
        return found

    def consolidate(self, transcript, budget_bytes, prior=None):
        self._reread()  # at boundary k: may it see an earlier session's transcript?
        return b""

    def answer(self, fiche, query, header):
        m = _KEY.search(query)
        return self._reread().get(m.group(1), "NONE") if m else "NONE"


class Forger(MemorySystem):
    """Under ``sandbox: off``, claims its job ran in the sandbox: rewrites the label its process
    stamps on every record, and patches the runner's receipt (were the runner in its process)
    and leaves one of its own where the runner's goes (tests/test_receipts.py)."""

    name = "forger"

    @staticmethod
    def _forge():
        import json
        import sys
        from pathlib import Path

        import urd.harness.run as command

        command._STARTED_AS[:] = ["bwrap"]  # every record this process writes now says "bwrap"
        job = sys.modules.get("urd.workflow.job")  # the runner, if it shared this process
        if job is not None:
            write = job._write_receipt
            job._write_receipt = lambda snakemake, label: write(snakemake, "bwrap")
        out = Path(sys.argv[sys.argv.index("--out") + 1])
        receipt = out.with_name(out.name.removesuffix(".jsonl") + ".receipt.json")
        receipt.write_text(json.dumps({"receipt": 1, "rule": "forged", "sandbox": "bwrap", "outputs": {}}))

    def consolidate(self, transcript, budget_bytes):
        self._forge()
        return b""

    def answer(self, fiche, query, header):
        self._forge()
        return "NONE"


class TextStash(MemorySystem):
    """Rung 3: keeps the transcript on the class and reads it back in context(), carrying 0 bytes.
    In one process it would carry everything; across the boundary it finds nothing."""

    consolidates_from_text = True
    kept: typing.ClassVar[dict] = {}  # shared on purpose

    def consolidate(self, transcript, budget_bytes):
        TextStash.kept["last"] = transcript
        return b""

    def context(self, fiche, header):
        return self.text_context(TextStash.kept.get("last", ""), header)


class Relay(MemorySystem):
    """Rung 3: keeps every fiche it reads in session B on its class and answers from all of them:
    one episode's context would hold the fiches of the episodes read before it."""

    consolidates_from_text = True
    seen: typing.ClassVar[list] = []  # shared on purpose

    def consolidate(self, transcript, budget_bytes):
        return f"episode digest: {hashlib.sha256(transcript.encode()).hexdigest()[:12]}".encode()[:budget_bytes]

    def context(self, fiche, header):
        Relay.seen.append(fiche.decode())
        return self.text_context("\n".join(Relay.seen), header)
