"""The Messages API on a real socket: :class:`FakeMessagesAPI`'s answers served over HTTP on
127.0.0.1 (an ephemeral port), so the anthropic SDK meets what it meets in a live run: refused
and reset connections, a stall past its timeout, 429 with retry-after, 529, 500, a batch that
stays in progress, a results stream cut short, and a client that dies mid-call.

What the server billed is its own record (``billed``): a reply is billed once its headers go out
(a body cut after them was billed too), a batch's succeeded items when it is created, at half
price; a request whose client hung up before it was answered is not billed. Bounded: it answers
at most ``max_requests`` requests and shuts itself down after ``lifetime_s``.
"""

from __future__ import annotations

import hashlib
import json
import select
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
from fake_messages_api import FakeMessagesAPI

from urd.llm import Usage

MESSAGES = "/v1/messages"
BATCHES = "/v1/messages/batches"
STATUS = {"429": "rate_limit_error", "529": "overloaded_error", "500": "api_error"}


class Fault:
    """One scripted misbehaviour for the next ``times`` requests to ``path`` (or, for a ``path``
    ending in ``/``, to the paths under it that end with ``suffix``): ``429`` (with ``retry-after``), ``529``, ``500``, ``refuse`` (hang
    up without answering), ``reset`` (send half the body and hang up), ``stall`` (answer nothing
    for ``seconds``), ``hold`` (answer once released, or never if the client hangs up first),
    ``cut`` (a results stream: half of it, then hang up), ``late`` (the request is processed and
    billed, as the API does, but the answer goes out only after ``seconds``, past a client's
    timeout: what a timed-out call may have cost). The first ``after`` matching requests pass
    untouched."""

    def __init__(self, kind: str, path: str = MESSAGES, *, times: int = 1, suffix: str = "", method: str = "POST",
                 seconds: float = 0.0, retry_after: str = "1", after: int = 0):
        self.kind, self.path, self.suffix, self.method, self.after = kind, path, suffix, method, after
        self.times, self.seconds, self.retry_after = times, seconds, retry_after


class MessagesServer:
    def __init__(self, api: FakeMessagesAPI | None = None, *, max_requests: int = 5000, lifetime_s: float = 600.0):
        self.api = api or FakeMessagesAPI()
        self.faults: list[Fault] = []
        self.log: list[dict] = []  # every request: method, path, retry count header, what became of it
        self.bodies: dict[str, list[bytes]] = {}  # every POST body, by path
        self.billed: list[dict] = []  # what the API billed: model, usage, batched, request digest
        self.creates = 0
        self.holding = threading.Event()  # set while a `hold` fault waits
        self.release = threading.Event()
        self.max_requests, self.lifetime_s = max_requests, lifetime_s
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart

            def log_message(self, *args):
                pass

            def do_GET(self):
                server._serve(self)

            def do_POST(self):
                server._serve(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self._timer = threading.Timer(lifetime_s, self.stop)
        self._timer.daemon = True

    # --- the tests' view --------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def fault(self, *args, **kwargs) -> MessagesServer:
        self.faults.append(Fault(*args, **kwargs))
        return self

    def billed_usd(self, prices) -> float:
        return sum((0.5 if b["batched"] else 1.0) * prices.cost(b["model"], b["usage"]) for b in self.billed)

    def billed_requests(self) -> Counter:
        """How many times each request (by digest of its model, turns and budget) was billed,
        lost replies aside. Two samples of one question are the same request on the wire."""
        return Counter(b["digest"] for b in self.billed if not b["lost"])

    def requests_to(self, path: str, method: str = "POST") -> list[dict]:
        return [e for e in self.log if e["path"] == path and e["method"] == method]

    def __enter__(self):
        self.api.base = self.base_url
        self.thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self._timer.cancel()
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- serving ----------------------------------------------------------------------------------
    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for f in self.faults:
                here = path == f.path or (f.path.endswith("/") and path.startswith(f.path) and path.endswith(f.suffix))
                if f.times > 0 and f.method == method and here:
                    if f.after > 0:
                        f.after -= 1
                        continue
                    f.times -= 1
                    return f
        return None

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        path = h.path.split("?")[0]
        entry = {"method": h.command, "path": path, "retry": int(h.headers.get("x-stainless-retry-count") or 0),
                 "at": time.monotonic(), "outcome": "answered"}
        with self._lock:
            self.log.append(entry)
            if h.command == "POST":
                self.bodies.setdefault(path, []).append(body)
            over = len(self.log) > self.max_requests
        if over:
            entry["outcome"] = "over the request bound"
            return self._send(h, 503, {"type": "error", "error": {"type": "api_error", "message": "request bound"}})
        fault = self._take_fault(h.command, path)
        kind = fault.kind if fault else None
        if kind in STATUS:
            entry["outcome"] = kind
            return self._send(h, int(kind), {"type": "error", "error": {"type": STATUS[kind], "message": kind}},
                              headers={"retry-after": fault.retry_after} if kind == "429" else {"retry-after-ms": "5"})
        if kind == "refuse":
            entry["outcome"] = "refused"
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return None
        if kind == "stall":
            time.sleep(fault.seconds)
            entry["outcome"] = "stalled"
            h.close_connection = True
            return None
        if kind == "hold":
            self.holding.set()
            while not self.release.wait(0.02):
                if _hung_up(h.connection):
                    entry["outcome"] = "client hung up"
                    h.close_connection = True
                    return None
            if _hung_up(h.connection):
                entry["outcome"] = "client hung up"
                h.close_connection = True
                return None
        request = httpx2.Request(h.command, "http://api" + h.path, headers={"content-type": "application/json"},
                                 content=body)
        response = self.api(request)
        content = response.content
        self._bill(h.command, path, body, response, lost=kind in ("reset", "late"))
        if kind == "late":  # billed; the answer waits past the client's timeout, then goes to a closed socket
            time.sleep(fault.seconds)
            entry["outcome"] = "answered late"
            h.close_connection = True
            return None
        if kind == "reset" or (kind == "cut" and path.endswith("/results")):
            entry["outcome"] = "cut mid-body"
            h.send_response(response.status_code)
            h.send_header("Content-Type", response.headers.get("content-type", "application/json"))
            h.send_header("Content-Length", str(len(content)))
            h.end_headers()
            h.wfile.write(content[: len(content) // 2])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return None
        h.send_response(response.status_code)
        h.send_header("Content-Type", response.headers.get("content-type", "application/json"))
        h.send_header("Content-Length", str(len(content)))
        for name in ("retry-after", "retry-after-ms"):
            if name in response.headers:
                h.send_header(name, response.headers[name])
        h.end_headers()
        h.wfile.write(content)
        return None

    def _bill(self, method: str, path: str, body: bytes, response, *, lost: bool) -> None:
        if method != "POST" or response.status_code != 200:
            return
        if path == MESSAGES:
            reply = json.loads(response.content)
            self._add_bill(reply, body, batched=False, lost=lost)
        elif path == BATCHES:
            self.creates += 1
            batch_id = json.loads(response.content)["id"]
            params = {r["custom_id"]: r["params"] for r in json.loads(body)["requests"]}
            for cid, item in self.api.batches[batch_id]:
                if item.status_code == 200:
                    self._add_bill(json.loads(item.content), json.dumps(params[cid], sort_keys=True).encode(),
                                   batched=True, lost=False)

    def _add_bill(self, reply: dict, body: bytes, *, batched: bool, lost: bool) -> None:
        u = reply["usage"]
        usage = Usage(u["input_tokens"], u["output_tokens"], u.get("cache_creation_input_tokens") or 0,
                      u.get("cache_read_input_tokens") or 0)
        params = json.loads(body)
        digest = hashlib.sha256(json.dumps({k: params[k] for k in ("model", "system", "messages", "max_tokens")},
                                           sort_keys=True).encode()).hexdigest()[:16]
        with self._lock:
            self.billed.append({"model": reply["model"], "usage": usage, "batched": batched, "lost": lost,
                                "digest": digest})

    @staticmethod
    def _send(h, status: int, payload: dict, headers: dict | None = None) -> None:
        content = json.dumps(payload).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(content)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(content)


def _hung_up(conn) -> bool:
    """Whether the client closed its end (readable, and nothing to read)."""
    readable, _, _ = select.select([conn], [], [], 0)
    if not readable:
        return False
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True
