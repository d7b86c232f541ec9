"""A lean MCP client for the stateless streamable-HTTP protocol (``2026-07-28``).

The official client costs ~5 ms of CPU per tool call (anyio streams, dispatcher, validation),
which dominates the harness's CPU at high concurrency. Servers that speak the stateless
2026-07-28 revision (the reference platform does) take one self-contained JSON-RPC POST per
request, so this client sends exactly that over pooled keep-alive connections
(:mod:`dabench.targets.loopback_http`, plain http only): ``server/discover``
once to confirm the version, then ``tools/list`` and ``tools/call`` with the ``Mcp-Method`` /
``Mcp-Name`` headers and the protocol ``_meta`` the revision requires. It reads JSON or
SSE responses. A server that does not offer the revision is refused at :meth:`open` (use the
official client for it).
"""

from __future__ import annotations

import itertools
import json
from typing import Any
from urllib.parse import urlsplit

from dabench import __version__
from dabench.errors import HarnessError
from dabench.providers.base import ToolSpec
from dabench.targets.base import ToolCallTimer, ToolOutcome
from dabench.targets.loopback_http import HttpResponse, LoopbackHttp

PROTOCOL_VERSION = "2026-07-28"
_MODEL_FAULT_CODES = {-32600, -32601, -32602}
"""JSON-RPC errors caused by the request itself: returned to the model as a tool error."""


class LeanMcpConnection:
    """Tool listing and tool calls over stateless streamable HTTP."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        *,
        call_timeout_s: float = 120.0,
        idle_s: float | None = None,
    ):
        """``idle_s``: the pool's idle limit (see :class:`LoopbackHttp`)."""
        self.url = url
        self.headers = {
            **headers,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
        }
        self.call_timeout_s = call_timeout_s
        self.idle_s = idle_s
        self._ids = itertools.count(1)
        self._http: LoopbackHttp | None = None
        self._owns_pool = True
        self._path = urlsplit(url).path or "/"
        self._tools: list[ToolSpec] | None = None
        self._meta = {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "dabench", "version": __version__},
            "io.modelcontextprotocol/clientCapabilities": {},
        }

    async def open(self) -> None:
        """Discover the server and check it speaks the stateless revision."""
        if self._http is None:
            self._http = LoopbackHttp(self.url, timeout_s=self.call_timeout_s, idle_s=self.idle_s)
        try:
            result = await self._request("server/discover", {})
        except _RpcError as exc:
            raise HarnessError(
                f"{self.url}: no server/discover ({exc}): not an MCP {PROTOCOL_VERSION} "
                "server; use the official client"
            ) from exc
        versions = result.get("supportedVersions") or result.get("supported_versions") or []
        if PROTOCOL_VERSION not in versions:
            raise HarnessError(
                f"{self.url}: the server does not offer MCP {PROTOCOL_VERSION} "
                f"(offers {versions}); use the official client"
            )

    @property
    def pool(self) -> LoopbackHttp | None:
        """The HTTP connection pool (``None`` until opened or after closing)."""
        return self._http

    def with_headers(self, headers: dict[str, str]) -> LeanMcpConnection:
        """An opened connection with other headers (another key of the same identity) on
        this one's pool and tool list; closing it leaves the pool open."""
        if self._http is None:
            raise HarnessError(f"MCP connection to {self.url} is closed")
        other = LeanMcpConnection(
            self.url, {}, call_timeout_s=self.call_timeout_s, idle_s=self.idle_s
        )
        other.headers = {**self.headers, **headers}
        other._http, other._owns_pool, other._tools = self._http, False, self._tools
        return other

    async def close(self) -> None:
        """Close the HTTP pool (unless it is borrowed); safe to call twice."""
        if self._http is not None:
            if self._owns_pool:
                await self._http.aclose()
            self._http = None

    async def _request(
        self, method: str, params: dict[str, Any], name: str | None = None
    ) -> dict[str, Any]:
        if self._http is None:
            raise HarnessError(f"MCP connection to {self.url} is closed")
        body = {
            "jsonrpc": "2.0",
            "id": next(self._ids),
            "method": method,
            "params": {**params, "_meta": self._meta},
        }
        headers = {**self.headers, "Mcp-Method": method}
        if name is not None:
            headers["Mcp-Name"] = name
        resp = await self._http.request(
            "POST", self._path, headers=headers, body=json.dumps(body).encode("utf-8")
        )
        if resp.status >= 400 and not resp.body:
            raise HarnessError(f"{method} failed on {self.url}: HTTP {resp.status}")
        message = _parse(resp)
        if "error" in message:
            err = message["error"] or {}
            raise _RpcError(int(err.get("code", 0)), str(err.get("message", "")))
        result = message.get("result")
        if not isinstance(result, dict):
            raise HarnessError(f"{method} on {self.url}: no result in {resp.body[:200]!r}")
        return result

    async def list_tools(self) -> list[ToolSpec]:
        """The server's tools (cached after the first listing)."""
        if self._tools is None:
            try:
                result = await self._request("tools/list", {})
            except _RpcError as exc:
                raise HarnessError(f"tools/list failed on {self.url}: {exc}") from exc
            self._tools = [
                ToolSpec(
                    name=t["name"],
                    description=t.get("description") or "",
                    input_schema=t.get("inputSchema") or {"type": "object"},
                )
                for t in result.get("tools", [])
            ]
        return list(self._tools)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Call a tool; a tool error is an outcome, a transport failure a HarnessError."""
        timer = ToolCallTimer()
        try:
            result = await self._request(
                "tools/call", {"name": name, "arguments": arguments}, name=name
            )
        except _RpcError as exc:
            if exc.code not in _MODEL_FAULT_CODES:
                raise HarnessError(f"tool call {name} failed on {self.url}: {exc}") from exc
            return timer.protocol_error(str(exc))
        parts = [
            c["text"] if c.get("type") == "text" else json.dumps(c, sort_keys=True)
            for c in result.get("content", [])
        ]
        return timer.outcome("\n".join(parts), bool(result.get("isError")))


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"MCP error {code}: {message}")
        self.code = code


def _parse(resp: HttpResponse) -> dict[str, Any]:
    """The JSON-RPC response in a JSON body or in the ``data`` of an SSE stream."""
    text = resp.body.decode("utf-8", errors="replace")
    try:
        if resp.content_type.startswith("text/event-stream"):
            for block in text.replace("\r\n", "\n").split("\n\n"):
                data = "\n".join(
                    line[5:].lstrip() for line in block.splitlines() if line.startswith("data:")
                )
                if data:
                    message = json.loads(data)
                    if isinstance(message, dict) and ("result" in message or "error" in message):
                        return message
            raise HarnessError(f"no JSON-RPC response in the event stream: {text[:200]}")
        message = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"invalid JSON-RPC response (HTTP {resp.status}): {text[:200]}") from exc
    if not isinstance(message, dict):
        raise HarnessError(f"invalid JSON-RPC response: {text[:200]}")
    return message
