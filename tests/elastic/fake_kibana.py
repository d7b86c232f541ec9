"""A local HTTP server that follows the documented Agent Builder API contract.

``POST /api/agent_builder/converse`` answers the round flattened into the body;
``POST /api/agent_builder/converse/async`` streams it as server-sent events
(``event: <type>`` / ``data: {"data": {...}}``, errors as ``event: error`` /
``data: {"error": {...}}``). A responder decides each round from the request body. Also
``GET /api/status`` and tools/agents create (POST), read (GET) and update (PUT). Paths may
carry a ``/s/<space>`` prefix. Every request is recorded. :meth:`FakeKibana.fail` scripts
transient failures ("429 with ``Retry-After: 0`` twice, then normally", "503 forever").

Like Kibana, it validates request bodies (unknown or missing keys and wrong types are a 400
naming the key) and refuses to ``POST`` an id that exists (HTTP 400 "Tool with id X already
exists"). ``generation`` picks the documented shapes of one Kibana generation:

- ``9.2`` (the ``onechat`` plugin): a synchronous body carries only ``conversation_id``,
  ``trace_id``, ``steps`` and ``response``; rounds report no ``model_usage`` and no timings.
- ``9.3`` (``agent_builder``): rounds with ``model_usage`` and timings, ``tabular_data`` and
  ``resource`` results.
- ``main``: ``tabular_data`` results are ``esql_results`` and ``resource`` results are one
  ``resource_list``; an unknown ``conversation_id`` silently starts a new conversation (with
  ``lost_same_id=True`` under the same id, as Kibana main can after losing one:
  :meth:`FakeKibana.forget` loses it)
  (9.2/9.3: HTTP 404 on the sync route, HTTP 200 and an ``error`` event ``conversationNotFound``
  on the async route).
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
GENERATIONS = ("9.2", "9.3", "main")
VERSION_NUMBER = {"9.2": "9.2.4", "9.3": "9.3.0", "main": "9.4.0-SNAPSHOT"}

# Documented request bodies: key -> (required, accepted Python types).
TOOL_CREATE = {"id": (True, str), "type": (True, str), "description": (False, str),
               "tags": (False, list), "configuration": (True, dict)}  # fmt: skip
TOOL_UPDATE = {"description": (False, str), "tags": (False, list), "configuration": (False, dict)}
AGENT_CREATE = {"id": (True, str), "name": (True, str), "description": (False, str),
                "labels": (False, list), "avatar_color": (False, str),
                "avatar_symbol": (False, str), "configuration": (True, dict)}  # fmt: skip
AGENT_UPDATE = {k: (False, t) for k, (_req, t) in AGENT_CREATE.items() if k != "id"}
AGENT_CONFIGURATION = {"instructions": (False, str), "tools": (False, list)}
CONVERSE = {"input": (True, str), "agent_id": (False, str), "connector_id": (False, str),
            "conversation_id": (False, str), "capabilities": (False, dict),
            "attachments": (False, list)}  # fmt: skip
TOOL_TYPES = ("esql", "index_search", "workflow", "mcp")


def schema_error(body: Any, schema: dict[str, tuple[bool, type]], where: str) -> str | None:
    """Kibana's validation message for ``body`` against ``schema``, ``None`` when valid."""
    if not isinstance(body, dict):
        return f"[{where}]: expected a plain object value, but found [{type(body).__name__}]"
    for key in body:
        if key not in schema:
            return f"[{where}.{key}]: definition for this key is missing"
    for key, (required, kind) in schema.items():
        if key not in body:
            if required:
                expected = kind.__name__
                return f"[{where}.{key}]: expected value of type [{expected}] but got [undefined]"
            continue
        if not isinstance(body[key], kind):
            return f"[{where}.{key}]: expected value of type [{kind.__name__}]"
    return None


def for_generation(generation: str, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool results (written in the 9.3 shapes) as ``generation`` sends them."""
    if generation != "main":
        return results
    out: list[dict[str, Any]] = []
    resources = [r["data"] for r in results if r.get("type") == "resource"]
    for r in results:
        if r.get("type") == "tabular_data":
            data = {k: r["data"][k] for k in ("query", "columns", "values") if k in r["data"]}
            out.append({**r, "type": "esql_results", "data": data})
        elif r.get("type") != "resource":
            out.append(r)
    if resources:
        out.append({"tool_result_id": "rl", "type": "resource_list",
                    "data": {"resources": resources}})  # fmt: skip
    return out


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

    def __init__(
        self,
        responder: Responder,
        *,
        api_key: str = "test-key",
        generation: str = "9.3",
        lost_same_id: bool = False,
    ) -> None:
        assert generation in GENERATIONS, generation
        self.responder = responder
        self.api_key = api_key
        self.generation = generation
        self.requests: list[dict[str, Any]] = []
        self.tools: dict[str, dict[str, Any]] = {}
        self.agents: dict[str, dict[str, Any]] = {}
        self.conversations: dict[str, list[str]] = {}
        self.lost_same_id = lost_same_id
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

    def forget(self, cid: str) -> None:
        """Lose a conversation (as a Kibana restart or cleanup might)."""
        with self._lock:
            self.conversations.pop(cid, None)

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
                prefix = "/api/agent_builder/conversations/"
                if path.startswith(prefix) and method == "GET":
                    cid = path[len(prefix) :]
                    if cid not in fake.conversations:
                        return self._error(404, f"Conversation {cid} not found")
                    rounds = [
                        {"id": f"{cid}-round-{i + 1}", "input": {"message": m}}
                        for i, m in enumerate(fake.conversations[cid])
                    ]
                    return self._json(200, {"id": cid, "rounds": rounds})
                if path == "/api/status":
                    number = VERSION_NUMBER[fake.generation]
                    return self._json(200, {"version": {"number": number}, "status": {}})
                for kind, store in (("tools", fake.tools), ("agents", fake.agents)):
                    base = f"/api/agent_builder/{kind}"
                    if path == base and method == "POST":
                        error = self._invalid(kind, body, create=True)
                        if error:
                            return self._error(400, error)
                        with fake._lock:
                            if body["id"] in store:
                                noun = kind[:-1].capitalize()
                                message = f"{noun} with id {body['id']} already exists"
                                return self._error(400, message)
                            store[body["id"]] = body
                        return self._json(200, body)
                    if path.startswith(base + "/"):
                        item = path[len(base) + 1 :]
                        if item not in store:
                            return self._error(404, f"{kind[:-1]} {item} not found")
                        if method == "PUT":
                            error = self._invalid(kind, body, create=False)
                            if error:
                                return self._error(400, error)
                            store[item] = {**store[item], **body}
                        return self._json(200, store[item])
                if path in CONVERSE_PATHS and method == "POST":
                    error = schema_error(body, CONVERSE, "request body")
                    if error:
                        return self._error(400, error)
                    return self._converse(body, stream=path.endswith("/async"))
                return self._error(404, f"no route {method} {path}")

            def _invalid(self, kind: str, body: Any, *, create: bool) -> str | None:
                """Kibana's 400 message for an invalid tools/agents body, else ``None``."""
                if kind == "tools":
                    error = schema_error(body, TOOL_CREATE if create else TOOL_UPDATE,
                                         "request body")  # fmt: skip
                    if not error and create and body["type"] not in TOOL_TYPES:
                        error = f"[request body.type]: unknown tool type {body['type']}"
                    return error
                error = schema_error(body, AGENT_CREATE if create else AGENT_UPDATE,
                                     "request body")  # fmt: skip
                if not error and "configuration" in body:
                    error = schema_error(body["configuration"], AGENT_CONFIGURATION,
                                         "request body.configuration")  # fmt: skip
                return error

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PUT(self) -> None:
                self._handle("PUT")

            def _converse(self, body: dict[str, Any], *, stream: bool) -> None:
                cid = body.get("conversation_id")
                recreated = False
                if cid is not None and cid not in fake.conversations:
                    if fake.generation == "main" and fake.lost_same_id:  # re-created, same id
                        with fake._lock:
                            fake.conversations[cid] = []
                        recreated = True
                    elif fake.generation == "main":  # silently starts a new conversation
                        cid = None
                    elif stream:
                        return self._lost_conversation_stream(cid)
                    else:
                        return self._error(404, f"Conversation {cid} not found")
                script = fake.responder(body)
                if script.delay_s:
                    time.sleep(script.delay_s)
                if script.http_status:
                    return self._error(script.http_status, "connector failed: upstream 500")
                new = cid is None or recreated
                cid = cid or fake._new_conversation()
                fake.conversations[cid].append(body.get("input", ""))
                steps = [
                    {**s, "results": for_generation(fake.generation, s["results"])}
                    if s.get("type") == "tool_call"
                    else s
                    for s in script.steps
                ]
                rnd: dict[str, Any] = {
                    "id": f"{cid}-round-{len(fake.conversations[cid])}",
                    "status": "completed",
                    "input": {"message": body.get("input", "")},
                    "steps": steps,
                    "response": {"message": script.message},
                }
                if fake.generation != "9.2":  # 9.2 rounds carry no timings and no usage
                    rnd["started_at"] = "2026-01-01T00:00:00.000Z"
                    rnd["time_to_first_token"] = 850
                    rnd["time_to_last_token"] = 1300
                    if script.model_usage is not None:
                        rnd["model_usage"] = script.model_usage
                if not stream:
                    if fake.generation == "9.2":
                        sync = {"conversation_id": cid, "trace_id": "trace-1", "steps": steps,
                                "response": rnd["response"]}  # fmt: skip
                        return self._json(200, sync)
                    flat = {k: v for k, v in rnd.items() if k not in ("id", "input")}
                    return self._json(200, {"conversation_id": cid, "round_id": rnd["id"], **flat})
                self._stream(cid, new, {**rnd, "steps": steps}, script)

            def _lost_conversation_stream(self, cid: str) -> None:
                """9.2/9.3 async route: HTTP 200, then an ``error`` event."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                err = {"code": "conversationNotFound", "message": f"Conversation {cid} not found"}
                self._event("error", {"error": err})

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
                        result = {k: step[k] for k in ("tool_call_id", "tool_id")}
                        result["results"] = for_generation(fake.generation, step["results"])
                        self._event("tool_result", {"data": result})
                if script.stream_error:
                    err = {"code": "internalError", "message": script.stream_error}
                    self._event("error", {"error": err})
                    return
                if script.truncate:
                    return
                if script.chunk_delay_s:
                    time.sleep(script.chunk_delay_s)
                if fake.generation != "9.2":
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
