"""Drive an ASGI app in-process: no socket, no HTTP parser, no client library.

Used by ``platform_roundtrip`` to measure what a server app itself costs per MCP request
(the SDK's request handling plus whatever the app adds) apart from uvicorn and the client.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
from starlette.types import ASGIApp, Message

PROTOCOL = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _scope(tool: str, key: str) -> dict[str, Any]:
    headers = {
        "host": "127.0.0.1:8000",
        "authorization": f"Bearer {key}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": PROTOCOL,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }


async def call_tool(app: ASGIApp, tool: str, arguments: dict[str, Any], key: str) -> Any:
    """POST one ``tools/call`` to ``app`` and return the JSON-RPC ``result``."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": META},
    }
    pending = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]
    chunks: list[bytes] = []
    status: list[int] = []

    async def receive() -> Message:
        if pending:
            return pending.pop()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            status.append(int(message["status"]))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(_scope(tool, key), receive, send)
    if status != [200]:
        raise RuntimeError(f"{tool}: HTTP {status}: {b''.join(chunks)[:300]!r}")
    return json.loads(b"".join(chunks))["result"]


class Lifespan:
    """Runs an app's ASGI lifespan (startup on enter, shutdown on exit)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._to_app: asyncio.Queue[Message] = asyncio.Queue()
        self._from_app: asyncio.Queue[Message] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Lifespan:
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        self._task = asyncio.create_task(
            self.app(scope, self._to_app.get, self._from_app.put)  # type: ignore[arg-type]
        )
        await self._to_app.put({"type": "lifespan.startup"})
        message = await self._from_app.get()
        if message["type"] != "lifespan.startup.complete":
            raise RuntimeError(f"startup failed: {message}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._to_app.put({"type": "lifespan.shutdown"})
        await self._from_app.get()
        if self._task is not None:
            await self._task
