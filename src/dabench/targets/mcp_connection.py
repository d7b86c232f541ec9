"""One MCP client connection (streamable HTTP or stdio) shared by many concurrent episodes.

The SDK's client is an anyio context manager that must be entered and exited in the same
task; :class:`McpConnection` therefore owns it from a dedicated background task, so any task
may call tools concurrently and any task may close it.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import httpx2
import mcp_types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from dabench.errors import HarnessError
from dabench.keepalive import DEFAULT_CLIENT_IDLE_S
from dabench.providers.base import ToolSpec
from dabench.targets.base import ToolCallTimer, ToolOutcome


@dataclass
class McpEndpoint:
    """Where an MCP server is: a streamable-HTTP URL (with headers) or a stdio command."""

    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None

    def describe(self) -> str:
        """For error messages (never includes headers, which may hold keys)."""
        return self.url or " ".join(self.command)


def _result_text(result: mcp_types.CallToolResult) -> str:
    parts: list[str] = []
    for block in result.content:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
        else:
            parts.append(block.model_dump_json(exclude_none=True))
    return "\n".join(parts)


class McpConnection:
    """A connected MCP client owned by a background task."""

    def __init__(
        self,
        endpoint: McpEndpoint,
        *,
        call_timeout_s: float = 120.0,
        idle_s: float = DEFAULT_CLIENT_IDLE_S,
    ) -> None:
        """``idle_s``: HTTP connections idle this long are closed, not reused (keep it below
        the server's keep-alive; ``httpx`` also drops connections the server closed)."""
        self.endpoint = endpoint
        self.call_timeout_s = call_timeout_s
        self.idle_s = idle_s
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._error: BaseException | None = None
        self._tools: list[ToolSpec] | None = None

    def _make_client(self) -> Client:
        ep = self.endpoint
        if ep.url:
            http = httpx2.AsyncClient(
                headers=ep.headers,
                timeout=httpx2.Timeout(30.0, read=self.call_timeout_s),
                limits=httpx2.Limits(keepalive_expiry=self.idle_s),
            )
            return Client(streamable_http_client(ep.url, http_client=http), cache=None)
        if not ep.command:
            raise HarnessError("an MCP endpoint needs a url or a command")
        params = StdioServerParameters(
            command=ep.command[0], args=ep.command[1:], env=ep.env or None, cwd=ep.cwd
        )
        return Client(params, cache=None)

    async def _own(self) -> None:
        try:
            client = self._make_client()
            async with client:
                self._client = client
                self._ready.set()
                await self._closing.wait()
        except BaseException as exc:  # the owner must report every failure to waiters
            self._error = exc
            if not isinstance(exc, asyncio.CancelledError | Exception):
                raise
        finally:
            self._client = None
            self._ready.set()

    async def open(self, timeout_s: float = 60.0) -> None:
        """Connect (idempotent); raises :class:`HarnessError` when the server is unreachable."""
        if self._owner is None:
            self._owner = asyncio.create_task(self._own(), name=f"mcp:{self.endpoint.describe()}")
        try:
            async with asyncio.timeout(timeout_s):
                await self._ready.wait()
        except TimeoutError as exc:
            raise HarnessError(f"MCP server {self.endpoint.describe()} did not answer") from exc
        if self._client is None:
            raise HarnessError(
                f"cannot connect to MCP server {self.endpoint.describe()}: {self._error!r}"
            )

    async def close(self) -> None:
        """Disconnect; safe to call twice."""
        self._closing.set()
        if self._owner is not None:
            with contextlib.suppress(BaseException):
                async with asyncio.timeout(10):
                    await self._owner
            if not self._owner.done():
                self._owner.cancel()
            self._owner = None

    def _live(self) -> Client:
        if self._client is None:
            raise HarnessError(f"MCP connection to {self.endpoint.describe()} is closed")
        return self._client

    async def list_tools(self) -> list[ToolSpec]:
        """The server's tools (cached after the first listing)."""
        if self._tools is None:
            try:
                result = await self._live().list_tools()
            except HarnessError:
                raise
            except Exception as exc:
                raise HarnessError(
                    f"tools/list failed on {self.endpoint.describe()}: {exc}"
                ) from exc
            self._tools = [
                ToolSpec(name=t.name, description=t.description or "", input_schema=t.input_schema)
                for t in result.tools
            ]
        return list(self._tools)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Call a tool; an MCP-level tool error is an outcome, a transport failure raises
        :class:`HarnessError`."""
        client = self._live()
        timer = ToolCallTimer()
        try:
            result = await client.call_tool(
                name, arguments, read_timeout_seconds=self.call_timeout_s
            )
        except Exception as exc:
            text = str(exc) or type(exc).__name__
            if _is_protocol_error(exc):
                return timer.protocol_error(text)
            raise HarnessError(
                f"tool call {name} failed on {self.endpoint.describe()}: {text}"
            ) from exc
        return timer.outcome(_result_text(result), bool(result.is_error))


_MODEL_FAULT_CODES = {-32600, -32601, -32602}
"""JSON-RPC errors caused by the request itself (invalid request, unknown method or tool,
invalid params): the model's mistake, not the infrastructure's."""


def _is_protocol_error(exc: Exception) -> bool:
    return isinstance(exc, MCPError) and exc.code in _MODEL_FAULT_CODES
