"""A local HTTP server that follows the documented Agent Builder API contract (Kibana 9.3).

``POST /api/agent_builder/converse`` answers the round flattened into the body;
``POST /api/agent_builder/converse/async`` streams it as server-sent events
(``event: <type>`` / ``data: {"data": {...}}``, errors as ``event: error`` /
``data: {"error": {...}}``). A responder decides each round from the request body. Also
``GET /api/status`` and tools/agents create (POST), read (GET) and update (PUT). Paths may
carry a ``/s/<space>`` prefix. Every request is recorded. :meth:`FakeKibana.fail` scripts
transient failures ("429 with ``Retry-After: 0`` twice, then normally", "503 forever").
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .loopback import LoopbackServer

DEFAULT_USAGE: dict[str, Any] = {
    "connector_id": "x",
    "llm_calls": 2,
    "input_tokens": 1200,
    "output_tokens": 80,
    "cached_input_tokens": 200,
}


@dataclass
class Scripted:
    """What the fake Kibana does for one round."""

    message: str = ""
    steps: list[dict[str, Any]] = field(default_factory=list)
    model_usage: dict[str, Any] | None = field(default_factory=lambda: dict(DEFAULT_USAGE))
    http_status: int | None = None
    """Fail the request with this status (and an Elastic-style error body)."""
    stream_error: str | None = None
    """Stream the steps, then an ``error`` event with this message, then end."""
    truncate: bool = False
    """End the stream without ``round_complete``."""
    delay_s: float = 0.0
    """Wait before answering (for timeouts)."""
    chunk_delay_s: float = 0.0
    """Wait before the first message chunk (time to first token)."""
    round_steps: bool = True
    """Include the steps in ``round_complete`` (else only in the individual events)."""


Responder = Callable[[dict[str, Any]], Scripted]

CONVERSE_PATHS = ("/api/agent_builder/converse", "/api/agent_builder/converse/async")


@dataclass
class Fault:
    """An HTTP error the fake answers instead of handling matching requests."""

    status: int
    times: int | None
    """How many matching requests fail (``None``: every one)."""
    paths: tuple[str, ...]
    method: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def take(self, method: str, path: str) -> bool:
        """True (and one fewer left) when this fault answers ``method path``."""
        if path not in self.paths or (self.method and method != self.method):
            return False
        if self.times is None:
            return True
        if self.times <= 0:
            return False
        self.times -= 1
        return True


def tool_step(
    tool_id: str, params: dict[str, Any], results: list[dict[str, Any]], call_id: str = "tc-1"
) -> dict[str, Any]:
    """A ``tool_call`` round step."""
    return {
        "type": "tool_call",
        "tool_call_id": call_id,
        "tool_id": tool_id,
        "params": params,
        "results": results,
    }


def tabular(query: str, columns: list[str], values: list[list[Any]]) -> dict[str, Any]:
    """A ``tabular_data`` tool result."""
    return {
        "tool_result_id": "r1",
        "type": "tabular_data",
        "data": {
            "source": "esql",
            "query": query,
            "columns": [{"name": c, "type": "long"} for c in columns],
            "values": values,
        },
    }


class FakeKibana(LoopbackServer):
    """The server; use as a context manager."""

    def __init__(self, responder: Responder, *, api_key: str = "test-key") -> None:
        self.responder = responder
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.tools: dict[str, dict[str, Any]] = {}
        self.agents: dict[str, dict[str, Any]] = {}
        self.conversations: dict[str, list[str]] = {}
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        super().__init__()

    def fail(
        self,
        status: int,
        *,
        times: int | None = 1,
        paths: tuple[str, ...] = CONVERSE_PATHS,
        method: str | None = None,
        retry_after: str | None = None,
    ) -> Fault:
        """Answer the next ``times`` requests to ``paths`` (default: both converse endpoints;
        ``None``: forever) with ``status`` and, when given, a ``Retry-After`` header."""
        headers = {} if retry_after is None else {"Retry-After": retry_after}
        fault = Fault(status, times, paths, method, headers)
        self.faults.append(fault)
        return fault

    def calls(self, path: str, method: str | None = None) -> int:
        """How many requests reached ``path`` (failed ones included)."""
        return sum(1 for r in self.requests if r["path"] == path and method in (None, r["method"]))

    def _fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            return next((f for f in self.faults if f.take(method, path)), None)

    def converse_bodies(self) -> list[dict[str, Any]]:
        """Bodies of every converse request, in order."""
        return [r["body"] for r in self.requests if r["path"].endswith(("/converse", "/async"))]

    def _new_conversation(self) -> str:
        with self._lock:
            cid = f"conv-{len(self.conversations) + 1}"
            self.conversations[cid] = []
            return cid

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _error(
                self, status: int, message: str, headers: dict[str, str] | None = None
            ) -> None:
                names = {400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
                         429: "Too Many Requests", 503: "Service Unavailable"}  # fmt: skip
                body = {"statusCode": status, "error": names.get(status, "Error"),
                        "message": message}  # fmt: skip
                self._json(status, body, headers)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                m = re.match(r"^/s/([^/]+)(/.*)$", self.path)
                space, path = (m.group(1), m.group(2)) if m else (None, self.path)
                fake.requests.append(
                    {
                        "method": method,
                        "path": path,
                        "space": space,
                        "body": body,
                        "headers": dict(self.headers),
                    }
                )
                if self.headers.get("Authorization") != f"ApiKey {fake.api_key}":
                    return self._error(401, "[security_exception] unable to authenticate")
                if method != "GET" and not self.headers.get("kbn-xsrf"):
                    return self._error(400, "Request must contain a kbn-xsrf header.")
                fault = fake._fault(method, path)
                if fault is not None:
                    return self._error(fault.status, "scripted fault", fault.headers)
                if path == "/api/status":
                    return self._json(200, {"version": {"number": "9.3.0"}, "status": {}})
                for kind, store in (("tools", fake.tools), ("agents", fake.agents)):
                    base = f"/api/agent_builder/{kind}"
                    if path == base and method == "POST":
                        store[body["id"]] = body
                        return self._json(200, body)
                    if path.startswith(base + "/"):
                        item = path[len(base) + 1 :]
                        if item not in store:
                            return self._error(404, f"{kind[:-1]} {item} not found")
                        if method == "PUT":
                            store[item] = {**store[item], **body}
                        return self._json(200, store[item])
                if path == "/api/agent_builder/converse" and method == "POST":
                    return self._converse(body, stream=False)
                if path == "/api/agent_builder/converse/async" and method == "POST":
                    return self._converse(body, stream=True)
                return self._error(404, f"no route {method} {path}")

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PUT(self) -> None:
                self._handle("PUT")

            def _converse(self, body: dict[str, Any], *, stream: bool) -> None:
                cid = body.get("conversation_id")
                if cid is not None and cid not in fake.conversations:
                    return self._error(404, f"Conversation {cid} not found")
                script = fake.responder(body)
                if script.delay_s:
                    time.sleep(script.delay_s)
                if script.http_status:
                    return self._error(script.http_status, "connector failed: upstream 500")
                new = cid is None
                cid = cid or fake._new_conversation()
                fake.conversations[cid].append(body.get("input", ""))
                rnd: dict[str, Any] = {
                    "id": f"{cid}-round-{len(fake.conversations[cid])}",
                    "status": "completed",
                    "input": {"message": body.get("input", "")},
                    "steps": script.steps,
                    "response": {"message": script.message},
                    "started_at": "2026-01-01T00:00:00.000Z",
                    "time_to_first_token": 850,
                    "time_to_last_token": 1300,
                }
                if script.model_usage is not None:
                    rnd["model_usage"] = script.model_usage
                if not stream:
                    flat = {k: v for k, v in rnd.items() if k not in ("id", "input")}
                    return self._json(200, {"conversation_id": cid, "round_id": rnd["id"], **flat})
                self._stream(cid, new, rnd, script)

            def _event(self, name: str, payload: dict[str, Any]) -> None:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode())
                self.wfile.flush()

            def _stream(self, cid: str, new: bool, rnd: dict[str, Any], script: Scripted) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                self.wfile.write(b": keep-alive\n")
                if new:
                    self._event("conversation_id_set", {"data": {"conversation_id": cid}})
                for step in script.steps:
                    if step.get("type") == "reasoning":
                        self._event("reasoning", {"data": {"reasoning": step["reasoning"]}})
                    elif step.get("type") == "tool_call":
                        call = {k: step[k] for k in ("tool_call_id", "tool_id", "params")}
                        self._event("tool_call", {"data": call})
                        result = {k: step[k] for k in ("tool_call_id", "tool_id", "results")}
                        self._event("tool_result", {"data": result})
                if script.stream_error:
                    err = {"code": "internalError", "message": script.stream_error}
                    self._event("error", {"error": err})
                    return
                if script.truncate:
                    return
                if script.chunk_delay_s:
                    time.sleep(script.chunk_delay_s)
                self._event("thinking_complete", {"data": {"time_to_first_token": 850}})
                words = script.message.split(" ")
                for i, word in enumerate(words):
                    chunk = word if i == 0 else " " + word
                    self._event(
                        "message_chunk", {"data": {"message_id": "m1", "text_chunk": chunk}}
                    )
                self._event(
                    "message_complete",
                    {"data": {"message_id": "m1", "message_content": script.message}},
                )
                done = dict(rnd) if script.round_steps else {**rnd, "steps": []}
                self._event("round_complete", {"data": {"round": done}})
                kind = "conversation_created" if new else "conversation_updated"
                self._event(kind, {"data": {"conversation_id": cid, "title": "t"}})

        return Handler
