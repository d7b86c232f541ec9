"""One MCP client connection (streamable HTTP or stdio): one MCP session.

The SDK's client is an anyio context manager that must be entered and exited in the same
task; :class:`McpConnection` therefore owns it from a dedicated background task, so any task
may call tools concurrently and any task may close it. Over HTTP, many connections (one MCP
session each, with its own ``Mcp-Session-Id``) may share one pooled transport
(:class:`SharedHttpTransport`), and a connection's headers may change after it opened
(:meth:`McpConnection.set_headers`, e.g. a session handle minted through the connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx2
import mcp_types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from dabench.errors import HarnessError
from dabench.keepalive import DEFAULT_CLIENT_IDLE_S
from dabench.providers.base import ToolSpec
from dabench.targets.base import ToolCallTimer, ToolOutcome


class SharedHttpTransport(httpx2.AsyncBaseTransport):
    """An HTTP connection pool that many connections (MCP sessions) share. Closing a
    session's client leaves the pool open; :meth:`close_pool` closes it."""

    def __init__(self, idle_s: float, shared: bool = True) -> None:
        self._pool = httpx2.AsyncHTTPTransport(limits=httpx2.Limits(keepalive_expiry=idle_s))
        self.shared = shared

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send through the pool."""
        return await self._pool.handle_async_request(request)

    async def close_pool(self) -> None:
        """Close the pooled connections."""
        await self._pool.aclose()


class _RecordingTransport(httpx2.AsyncBaseTransport):
    """One connection's view of a pool: remembers the last transport failure (the SDK only
    reports "Connection closed" for it) and closes a pool that is not shared."""

    def __init__(self, pool: SharedHttpTransport) -> None:
        self.pool = pool
        self.failure: BaseException | None = None

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self.pool.handle_async_request(request)
        except Exception as exc:
            self.failure = exc
            raise

    async def aclose(self) -> None:
        if not self.pool.shared:
            await self.pool.close_pool()


def root_cause(exc: BaseException) -> str:
    """The innermost failure of ``exc`` (exception groups and ``__cause__`` chains unwrapped),
    as ``Type: message`` for an episode's harness-error cause."""
    seen: set[int] = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        elif exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            break
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@dataclass
class McpEndpoint:
    """Where an MCP server is: a streamable-HTTP URL (with headers) or a stdio command."""

    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    errlog: Path | None = None
    """Where a stdio server's stderr goes (appended; default: the harness's stderr)."""

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
    if not parts and result.structured_content is not None:
        # A tool that answers only in structuredContent (no content blocks).
        return json.dumps(result.structured_content, default=str)
    return "\n".join(parts)


class McpConnection:
    """A connected MCP client owned by a background task."""

    close_wait_s = 10.0
    """How long :meth:`close` waits for a connected session to shut down before cancelling it."""

    def __init__(
        self,
        endpoint: McpEndpoint,
        *,
        call_timeout_s: float = 120.0,
        idle_s: float = DEFAULT_CLIENT_IDLE_S,
        transport: SharedHttpTransport | None = None,
    ) -> None:
        """``idle_s``: HTTP connections idle this long are closed, not reused (keep it below
        the server's keep-alive; ``httpx`` also drops connections the server closed).
        ``transport``: a shared HTTP pool (else this connection has its own)."""
        self.endpoint = endpoint
        self.call_timeout_s = call_timeout_s
        self.idle_s = idle_s
        self.transport = transport
        self.mcp_session_id: str | None = None
        """The ``Mcp-Session-Id`` the HTTP server assigned (``None`` on stdio, and with the
        stateless revision ``2026-07-28``, which has no protocol-level session)."""
        self.protocol_version: str | None = None
        """The protocol revision negotiated at connect."""
        self._http: httpx2.AsyncClient | None = None
        self._recorder: _RecordingTransport | None = None
        self._errlog: TextIO | None = None
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._error: BaseException | None = None
        self._tools: list[ToolSpec] | None = None

    def _make_client(self) -> Client:
        ep = self.endpoint
        if ep.url:

            async def session_id(response: httpx2.Response) -> None:
                self.mcp_session_id = response.headers.get("mcp-session-id", self.mcp_session_id)

            pool = self.transport or SharedHttpTransport(self.idle_s, shared=False)
            self._recorder = _RecordingTransport(pool)
            http = httpx2.AsyncClient(
                headers=ep.headers,
                timeout=httpx2.Timeout(30.0, read=self.call_timeout_s),
                transport=self._recorder,
                event_hooks={"response": [session_id]},
            )
            self._http = http
            return Client(streamable_http_client(ep.url, http_client=http), cache=None)
        if not ep.command:
            raise HarnessError("an MCP endpoint needs a url or a command")
        params = StdioServerParameters(
            command=ep.command[0], args=ep.command[1:], env=ep.env or None, cwd=ep.cwd
        )
        if ep.errlog is None:
            return Client(params, cache=None)
        ep.errlog.parent.mkdir(parents=True, exist_ok=True)
        self._errlog = ep.errlog.open("a", encoding="utf-8")
        return Client(stdio_client(params, errlog=self._errlog), cache=None)

    async def _own(self) -> None:
        try:
            client = self._make_client()
            async with client:
                self._client = client
                self.protocol_version = str(client.protocol_version)
                self._ready.set()
                await self._closing.wait()
        except BaseException as exc:  # the owner must report every failure to waiters
            self._error = exc
            if not isinstance(exc, asyncio.CancelledError | Exception):
                raise
        finally:
            self._client = None
            self._ready.set()
            if self._http is not None:
                with contextlib.suppress(Exception):
                    await self._http.aclose()  # a shared transport stays open
            if self._errlog is not None:
                self._errlog.close()

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
            cause = root_cause(self._error) if self._error is not None else "closed"
            raise HarnessError(
                f"cannot connect to MCP server {self.endpoint.describe()}: {cause}{self._tail()}"
            )

    def _tail(self) -> str:
        """What explains a failure beyond the SDK's words: the last HTTP transport failure,
        or the end of a stdio server's stderr log."""
        if self._recorder is not None and self._recorder.failure is not None:
            return f" (HTTP: {root_cause(self._recorder.failure)})"
        log = self.endpoint.errlog
        if log is None or not log.exists():
            return ""
        with log.open("rb") as fh:
            fh.seek(max(0, log.stat().st_size - 600))
            tail = fh.read().decode("utf-8", "replace").strip()
        return f"\nserver stderr ({log}):\n{tail}" if tail else ""

    def set_headers(self, headers: dict[str, str]) -> None:
        """Send ``headers`` with every later HTTP request of this connection."""
        if self._http is None:
            raise HarnessError(f"{self.endpoint.describe()}: headers need an HTTP connection")
        self._http.headers.update(headers)

    async def close(self) -> None:
        """Disconnect; safe to call twice."""
        self._closing.set()
        if self._owner is not None:
            if not self._ready.is_set():
                # Still connecting (a server that never answers the handshake): it would
                # only see _closing once connected, so stop it now, not after the timeout.
                self._owner.cancel()
            with contextlib.suppress(BaseException):
                async with asyncio.timeout(self.close_wait_s):
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
                    f"tools/list failed on {self.endpoint.describe()}: {root_cause(exc)}"
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
                f"tool call {name} failed on {self.endpoint.describe()}: {root_cause(exc)}"
                f"{self._tail()}"
            ) from exc
        return timer.outcome(_result_text(result), bool(result.is_error))


_MODEL_FAULT_CODES = {-32600, -32601, -32602}
"""JSON-RPC errors caused by the request itself (invalid request, unknown method or tool,
invalid params): the model's mistake, not the infrastructure's."""


def _is_protocol_error(exc: Exception) -> bool:
    return isinstance(exc, MCPError) and exc.code in _MODEL_FAULT_CODES
