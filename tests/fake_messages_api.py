"""A fake Messages API for the live path, offline: an httpx2 mock transport that answers
/v1/messages (and Message Batches) from a scripted responder, with token usage (a quarter
token a byte), so the real anthropic SDK runs end to end without the network."""

import datetime
import json

import httpx2

from urd.llm import Request


class FakeMessagesAPI:
    """Answers /v1/messages from the scripted table; usage is a quarter-token per byte."""

    def __init__(self, responder=None, *, answered_model=None, fail_first=(), batch_polls=0):
        if responder is None:
            from urd.agentmem.scripted import ScriptedResponder, ScriptedTable

            responder = ScriptedResponder(ScriptedTable.load())
        self.responder = responder
        self.answered_model = answered_model
        self.fail_first = list(fail_first)
        self.requests = []
        self.batches = {}
        self.created = {}  # batch id -> when it was made (listed newest first, as the API lists)
        self.gone = set()  # batches the API no longer knows: retrieve and results answer 404
        self.batch_polls = batch_polls  # a batch reads in_progress this many times before it ends
        self.polls = {}
        self.base = "https://api.anthropic.com"  # where results_url points (the loopback server sets its own)

    def __call__(self, request):
        self.requests.append(request)
        if self.fail_first:
            return httpx2.Response(self.fail_first.pop(0), headers={"retry-after-ms": "1"}, json={"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
        if request.url.path.startswith("/v1/messages/batches"):
            return self._batch(request)
        return self._message(json.loads(request.content))

    def _batch(self, request):
        """Message Batches: create (in progress), retrieve (ended), results (JSONL)."""
        path = request.url.path
        if request.method == "POST" and path.endswith("/cancel"):
            batch_id = path.split("/")[4]
            self.canceled = {*getattr(self, "canceled", ()), batch_id}
            return httpx2.Response(200, json=self._batch_object(batch_id, "canceling"))
        if request.method == "POST":
            body = json.loads(request.content)
            batch_id = f"msgbatch_{len(self.batches) + 1}"
            self.batches[batch_id] = [(r["custom_id"], self._message(r["params"])) for r in body["requests"]]
            self.created[batch_id] = datetime.datetime.now(datetime.UTC)
            return httpx2.Response(200, json=self._batch_object(batch_id, "in_progress"))
        if path.rstrip("/") == "/v1/messages/batches":  # list: newest first, one page
            newest = sorted((b for b in self.batches if b not in self.gone), key=self.created.get, reverse=True)
            data = [self._batch_object(b, self._status(b)) for b in newest]
            return httpx2.Response(200, json={"data": data, "has_more": False, "first_id": data[0]["id"] if data else None,
                                              "last_id": data[-1]["id"] if data else None})
        batch_id = path.split("/")[4]
        if batch_id in self.gone:
            return httpx2.Response(404, json={"type": "error", "error": {"type": "not_found_error",
                                                                          "message": f"no batch {batch_id}"}})
        if path.endswith("/results"):
            lines = [json.dumps({"custom_id": cid, "result": {"type": "succeeded", "message": json.loads(r.content)}})
                     if r.status_code == 200 else json.dumps({"custom_id": cid, "result": {"type": "errored", "error": json.loads(r.content)}})
                     for cid, r in self.batches[batch_id]]
            return httpx2.Response(200, content="\n".join(lines).encode(), headers={"content-type": "application/binary"})
        self.polls[batch_id] = self.polls.get(batch_id, 0) + 1
        return httpx2.Response(200, json=self._batch_object(batch_id, self._status(batch_id)))

    def _status(self, batch_id):
        done = self.polls.get(batch_id, 0) > self.batch_polls or batch_id in getattr(self, "canceled", ())
        return "ended" if done else "in_progress"

    def _batch_object(self, batch_id, status):
        n = len(self.batches[batch_id])
        return {"id": batch_id, "type": "message_batch", "processing_status": status,
                "created_at": self.created.get(batch_id, datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)).isoformat(),
                "expires_at": "2099-12-02T00:00:00Z",
                "ended_at": "2026-12-01T00:01:00Z" if status == "ended" else None,
                "archived_at": None, "cancel_initiated_at": None,
                "request_counts": {"processing": 0 if status == "ended" else n, "succeeded": n if status == "ended" else 0,
                                   "errored": 0, "canceled": 0, "expired": 0},
                "results_url": f"{self.base}/v1/messages/batches/{batch_id}/results" if status == "ended" else None}

    def _message(self, body):
        system = "".join(block["text"] for block in body["system"])
        user = body["messages"][0]["content"]
        answer = self.responder(Request("update", system, user, body["max_tokens"]))
        if isinstance(answer, tuple):
            return httpx2.Response(400, json={"type": "error", "error": {"type": "invalid_request_error", "message": answer[1]}})
        model = self.answered_model(user) if self.answered_model else body["model"]
        stop, out_tokens = "end_turn", len(answer) // 4 + 1  # the fake's tokens: 4 characters each
        if out_tokens > body["max_tokens"]:  # cut where the budget ends, as the API does
            stop, out_tokens, answer = "max_tokens", body["max_tokens"], answer[: 4 * body["max_tokens"]]
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": answer}], "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": len(user) // 4, "output_tokens": out_tokens,
                          "cache_creation_input_tokens": len(system) // 4, "cache_read_input_tokens": 0},
            },
        )

    def client(self):
        return httpx2.Client(transport=httpx2.MockTransport(self))
