"""The MCP face of the platform, on the official SDK's low-level ``Server``.

Over HTTP the caller's identity comes from ``Authorization: Bearer <key>`` (checked by
:class:`~dabench.platform.mcp_gate.McpAuditGate` before the SDK sees the request) and the
session handle may come from the ``X-DPS-Session`` header; over stdio the identity is fixed
at start-up.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from starlette.requests import Request

from dabench import __version__
from dabench.platform.admin.auth import Identity
from dabench.platform.mcp_gate import AUDITED_STATE_KEY, IDENTITY_STATE_KEY, SESSION_HEADER
from dabench.platform.service import SERVER_NAME, PlatformService
from dabench.platform.tools import tool_annotations

SQL_THREADS = 256
"""Threads for ``sql_query`` calls, apart from anyio's default pool (40) that serves the other
tools; the query scheduler, not this number, decides how many queries run at once."""


def _identity(ctx: ServerRequestContext[Any, Any], fixed: Identity | None) -> Identity:
    request = ctx.request
    if isinstance(request, Request):
        ident = request.scope.get("state", {}).get(IDENTITY_STATE_KEY)
        if isinstance(ident, Identity):
            return ident
    if fixed is not None:
        return fixed
    raise RuntimeError("no caller identity on this request")  # the auth gate prevents this


def _header_session(ctx: ServerRequestContext[Any, Any]) -> str | None:
    request = ctx.request
    if isinstance(request, Request):
        return request.headers.get(SESSION_HEADER)
    return None


def build_mcp_server(service: PlatformService, fixed_identity: Identity | None = None) -> Server:
    """A low-level MCP server exposing ``service``'s tools for the caller's persona.

    Calls go through :meth:`PlatformService.acall`: ``platform_info`` and a query that finds
    a slot and an idle SQL worker run on the event loop; other ``sql_query`` calls wait for
    their slot on the loop too, then run on threads of their own (:data:`SQL_THREADS` at
    most; only a query holding its slot holds one), so tools that run no SQL never wait
    behind SQL for a thread of anyio's default pool."""
    sql_limiter: list[anyio.CapacityLimiter] = []

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        identity = _identity(ctx, fixed_identity)
        tools = [
            types.Tool(
                name=s.name,
                description=s.description,
                input_schema=s.input_schema,
                annotations=types.ToolAnnotations(**tool_annotations(s.name)),
            )
            for s in service.tool_specs(identity)
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        identity = _identity(ctx, fixed_identity)
        if isinstance(ctx.request, Request):
            # service.call writes this request's row (whatever happens, even if the client
            # goes away meanwhile), so the gate must not write a second one
            ctx.request.scope.setdefault("state", {})[AUDITED_STATE_KEY] = True
        limiter = None
        if params.name == "sql_query":
            if not sql_limiter:  # created on the event loop that serves the calls
                sql_limiter.append(anyio.CapacityLimiter(SQL_THREADS))
            limiter = sql_limiter[0]
        # Not shielded: a cancelled call (notifications/cancelled, or the client gone) stops
        # its query and frees its slot; acall still writes the call's audit row (CANCELLED)
        # before the cancellation propagates, and shields the tools it cannot stop.
        outcome = await service.acall(
            identity, params.name, params.arguments, _header_session(ctx), limiter=limiter
        )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=outcome.text)],
            structured_content=outcome.payload,
            is_error=outcome.is_error,
        )

    server: Server = Server(
        SERVER_NAME,
        version=__version__,
        instructions=(
            "A data platform over a warehouse. Call platform_info first and pass its "
            "session_id to every other tool."
        ),
        get_tool_input_schema=service.tool_input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    server.middleware = []  # no OpenTelemetry span per message: nothing exports them here
    return server
