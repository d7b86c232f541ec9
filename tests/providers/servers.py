"""Local HTTP servers that speak the providers' documented wire formats, for tests.

:class:`WireServer` listens on 127.0.0.1 (a free port), records every request (path, headers,
JSON body) and answers from a queue of scripted :class:`Reply` objects, falling back to a
``default`` responder. Builders produce the documented bodies:

- Anthropic Messages API (``POST /v1/messages``): :func:`anthropic_message`,
  :func:`anthropic_error` (``{"type": "error", "error": {"type", "message"}}``).
- OpenAI Chat Completions (``POST /v1/chat/completions``): :func:`openai_completion`,
  :func:`openai_error` (``{"error": {"message", "type", "code"}}``).

A reply with ``delay`` longer than the client's timeout simulates a hung server. Other
helpers' tests may reuse this module (``from tests.providers.servers import WireServer``).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import Any

from tests.quiet_http import QuietThreadingHTTPServer

from dabench.providers import ToolSpec

SQL_TOOL = ToolSpec(
    name="sql_query",
    description="Run SQL",
    input_schema={"type": "object", "properties": {"sql": {"type": "string"}}},
)
"""A tool with an input schema, as both adapters' request-shape tests send it."""


@dataclass
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The parsed JSON body, or ``None`` when it was empty or not JSON."""


@dataclass
class Reply:
    """One scripted response."""

    status: int = 200
    body: Any = None
    """A JSON-serialisable body, or ``bytes`` sent verbatim."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering (longer than the client timeout: a hang)."""


Responder = Callable[[RecordedRequest], Reply]


class WireServer:
    """A threaded HTTP server on 127.0.0.1 with scripted replies; use as a context manager."""

    def __init__(self, default: Responder | None = None) -> None:
        self.default = default
        self.requests: list[RecordedRequest] = []
        self._queue: list[Reply] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = QuietThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def enqueue(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies``, in order."""
        with self._lock:
            self._queue.extend(replies)

    def bodies(self) -> list[Any]:
        """The JSON bodies received so far."""
        return [r.body for r in self.requests]

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.pop(0)
        if self.default is not None:
            return self.default(request)
        return Reply(status=500, body={"error": {"message": "no scripted reply"}})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are separate writes

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                self._serve()

            def do_GET(self) -> None:
                self._serve()

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    body = None
                request = RecordedRequest(
                    method=self.command,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                reply = server._next_reply(request)
                if reply.delay and server._stopping.wait(reply.delay):
                    return
                payload = (
                    reply.body
                    if isinstance(reply.body, bytes)
                    else json.dumps(reply.body).encode("utf-8")
                )
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    return

        return Handler

    def start(self) -> WireServer:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests still waiting on a ``delay`` are abandoned."""
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def closed_port_url() -> str:
    """A loopback URL on which nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


# --- Anthropic Messages API -------------------------------------------------------------


def anthropic_message(
    text: str = "",
    *,
    tool_uses: list[tuple[str, str, Any]] | None = None,
    stop_reason: str | None = None,
    model: str = "claude-sonnet-4-6",
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int = 0,
    cache_write: int = 0,
) -> dict[str, Any]:
    """A ``message`` response body with optional text and ``tool_use`` blocks (id, name, input)."""
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    for tool_id, name, tool_input in tool_uses or []:
        content.append({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if tool_uses else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_write,
            "cache_read_input_tokens": cache_read,
        },
    }


def anthropic_error(
    status: int, error_type: str, message: str, headers: dict[str, str] | None = None
) -> Reply:
    """An error reply in the Messages API's error shape."""
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return Reply(status=status, body=body, headers=headers or {})


def anthropic_text_responder(text: str = "ok") -> Responder:
    """A default responder answering every request with ``text``."""
    return lambda _request: Reply(body=anthropic_message(text))


# --- OpenAI Chat Completions --------------------------------------------------------------


def openai_completion(
    text: str | None = None,
    *,
    tool_calls: list[tuple[str, str, str]] | None = None,
    finish_reason: str | None = None,
    model: str = "gpt-4.1-2025-04-14",
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    cached_tokens: int | None = None,
    cost: float | None = None,
    extra_usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``chat.completion`` body; ``tool_calls`` are (id, name, arguments-as-sent string)."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}
            for cid, name, arguments in tool_calls
        ]
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    if cost is not None:
        usage["cost"] = cost
    usage.update(extra_usage or {})
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": usage,
    }


def openai_error(
    status: int,
    message: str,
    *,
    error_type: str = "server_error",
    headers: dict[str, str] | None = None,
) -> Reply:
    """An error reply in the Chat Completions error shape."""
    body = {"error": {"message": message, "type": error_type, "param": None, "code": None}}
    return Reply(status=status, body=body, headers=headers or {})


def openai_text_responder(text: str = "ok") -> Responder:
    """A default responder answering every request with ``text``."""
    return lambda _request: Reply(body=openai_completion(text))
