"""Any MCP server as a target: a stdio command or a streamable-HTTP URL.

Every episode session is its own MCP session: over HTTP a new ``Mcp-Session-Id`` on one
pooled HTTP transport; over stdio a server process per session, unless ``share_process``
(then one process and one MCP session serve every episode: stdio has no second session).
``warm_pool: N`` keeps N stdio processes started ahead of the sessions that will each own
one (:mod:`dabench.targets.warm_pool`): isolation without waiting for start-up.
Each session has a handle: minted by the target when ``session_tool`` names a tool that
returns one (the reference platform's ``platform_info``), else by the harness (``hs_...``).
``session_argument`` and ``episode_arguments`` are hidden from the tool schemas and
injected into every call; ``episode_headers`` go with every HTTP request of the session;
``{session}`` in their values is replaced by the handle.

Without an ``audit`` reader the target has no audit API: efficiency comes from the
harness's own trace and the manifest says so (``efficiency_source: harness``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, model_validator

from dabench.errors import HarnessError, UserInputError
from dabench.fields import Seconds
from dabench.journal.records import AuditCheck
from dabench.keepalive import DEFAULT_CLIENT_IDLE_S
from dabench.providers.base import ToolSpec
from dabench.redaction import redact
from dabench.roles import REFERENCE_ROLES, ToolRoles
from dabench.sqlresult import server_error
from dabench.targets.audit import AuditReaderConfig, http_client, httpx_get, read_audit_http
from dabench.targets.base import (
    SqlDialect,
    Target,
    TargetContext,
    TargetSession,
    ToolOutcome,
    check_roles_offered,
    hide_argument,
)
from dabench.targets.mcp_connection import McpConnection, McpEndpoint, SharedHttpTransport
from dabench.targets.registry import Kind
from dabench.targets.warm_pool import WarmPool

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_KEEP_UNSET: ContextVar[bool] = ContextVar("keep_unset_env", default=False)


def expand_env(value: str) -> str:
    """Replace ``${VAR}`` with the environment variable (missing -> a clear error, or kept
    as written inside :func:`unexpanded_env`)."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in os.environ:
            return os.environ[name]
        if _KEEP_UNSET.get():
            return m.group(0)
        raise UserInputError(f"environment variable {name} is not set (used in {value!r})")

    return _ENV_REF.sub(sub, value)


@contextlib.contextmanager
def unexpanded_env() -> Iterator[None]:
    """Build targets that are only described, never started here (a play command's view of
    the target its play host runs): an unset ``${VAR}`` stays as written."""
    token = _KEEP_UNSET.set(True)
    try:
        yield
    finally:
        _KEEP_UNSET.reset(token)


SESSION_PLACEHOLDER = "{session}"


def with_handle(value: Any, handle: str) -> Any:
    """``value`` with ``{session}`` replaced by ``handle`` in every string it holds."""
    if isinstance(value, str):
        return value.replace(SESSION_PLACEHOLDER, handle)
    if isinstance(value, dict):
        return {k: with_handle(v, handle) for k, v in value.items()}
    if isinstance(value, list):
        return [with_handle(v, handle) for v in value]
    return value


class SessionToolConfig(BaseModel):
    """A tool that opens a session on the server and returns its handle."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """Called once per episode session, before the model's first call; never shown to it."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    field: str = "session_id"
    """The key of the handle in the tool's JSON result."""


class McpTargetConfig(BaseModel):
    """``target: {kind: mcp, command: [npx, ...]}`` or ``{kind: mcp, url: http://.../mcp}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["mcp"] = "mcp"
    name: str = "mcp"
    """Label used in episodes (``mcp:<name>``)."""
    command: list[str] = Field(default_factory=list)
    """A stdio server's command line; ``${VAR}`` is expanded (give a password that way: the
    manifest masks a literal ``user:password@`` but the experiment file still holds it)."""
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers; ``${VAR}`` is expanded from the environment."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for a stdio server; ``${VAR}`` is expanded."""
    cwd: str | None = None
    session_argument: str | None = None
    """Name of a tool argument that carries the session handle (hidden and injected)."""
    session_tool: SessionToolConfig | None = None
    """Mint each session's handle with this tool (else the harness mints ``hs_...``)."""
    episode_headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers of one session; ``{session}`` is its handle, ``${VAR}`` the environment."""
    episode_arguments: dict[str, Any] = Field(default_factory=dict)
    """Arguments injected into every call of a tool that declares them (hidden from the
    model); ``{session}`` in a string is the handle."""
    share_process: bool = False
    """stdio only: one server process (and MCP session) for all episodes instead of one
    process per episode session."""
    warm_pool: int = Field(default=0, ge=0)
    """stdio only: keep this many server processes started and initialized ahead of need;
    each episode session takes one (never reused) and a replacement starts at once. 0: start
    each session's process when the session opens."""
    hide_tools: list[str] = Field(default_factory=list)
    """Tools never shown to the model."""
    audit: AuditReaderConfig | None = None
    """The target's audit API, if it has one."""
    sql_dialect: SqlDialect = "duckdb"
    """The dialect of the server's SQL tool (``postgres`` for a PostgreSQL server): the oracle
    sends each task's truth SQL in it (``grading.truth_sql_dialects``, else translated)."""
    roles: ToolRoles | None = None
    """Which tools play ``sql``, ``search``, ``describe``, ``list``, ``fetch`` and how their
    arguments map (:mod:`dabench.roles`); a role not given keeps the reference tool name,
    a role given as ``null`` is not played."""
    call_timeout_s: Seconds = 120.0
    idle_s: Seconds = DEFAULT_CLIENT_IDLE_S
    """Close HTTP connections idle this many seconds instead of reusing them; keep it below
    the server's keep-alive (4 s suits uvicorn's and Node's 5 s)."""

    @model_validator(mode="after")
    def _one_endpoint(self) -> McpTargetConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("an mcp target needs exactly one of 'command' or 'url'")
        if self.episode_headers and not self.url:
            raise ValueError("'episode_headers' need a 'url' (stdio has no headers)")
        if self.share_process and not self.command:
            raise ValueError("'share_process' is for a stdio 'command'")
        if self.warm_pool and not self.command:
            raise ValueError("'warm_pool' is for a stdio 'command'")
        if self.warm_pool and self.share_process:
            raise ValueError("'warm_pool' starts a process per episode: not with 'share_process'")
        return self

    def injected(self) -> dict[str, Any]:
        """Every argument injected into calls (``{session}`` not yet replaced)."""
        out = dict(self.episode_arguments)
        if self.session_argument:
            out[self.session_argument] = SESSION_PLACEHOLDER
        return out


class McpSession(TargetSession):
    """One episode session: its own MCP session (or the shared stdio one) and handle."""

    def __init__(
        self, target: McpTarget, conn: McpConnection, handle: str, identity: str, owned: bool
    ) -> None:
        self.target = target
        self.conn = conn
        self.handle = handle
        self.identity = identity
        self.owned = owned
        """Whether this session owns its connection (closed with the session)."""
        self._arguments: dict[str, Any] = with_handle(target.config.injected(), handle)

    @property
    def mcp_session_id(self) -> str | None:
        """The server's ``Mcp-Session-Id`` for this session (HTTP, before ``2026-07-28``)."""
        return self.conn.mcp_session_id

    @property
    def protocol_version(self) -> str | None:
        """The MCP revision this session negotiated."""
        return self.conn.protocol_version

    async def tools(self) -> list[ToolSpec]:
        """The server's tools minus hidden ones, injected arguments hidden."""
        return await self.target.shown_tools()

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Call the tool, injecting the handle and episode arguments where it takes them."""
        declared = await self.target.argument_names(name)
        extra = {k: v for k, v in self._arguments.items() if k in declared}
        outcome = await self.conn.call(name, {**arguments, **extra})
        if not outcome.is_error and name in self.target.tool_roles.tools_for("sql"):
            # A server that answers a failed query with text ("Error: ...", "Database
            # error: ...", {"success": false, ...}) and no isError: a tool error, not data.
            error = server_error(outcome.text)
            if error is not None:
                outcome = replace(outcome, is_error=True, error_code="SQL_ERROR_TEXT")
        return outcome

    async def close(self) -> None:
        """End the MCP session (and stop its stdio process)."""
        if self.owned:
            await self.conn.close()


class McpTarget(Target):
    """Any MCP server."""

    kind = "mcp"

    def __init__(self, config: McpTargetConfig, context: TargetContext) -> None:
        self.config = config
        self.context = context
        self.efficiency_source = "platform" if config.audit else "harness"
        self.sql_dialect = config.sql_dialect
        cwd = config.cwd
        if cwd and not Path(cwd).is_absolute():
            cwd = str(context.experiment_dir / cwd)
        self.endpoint = McpEndpoint(
            url=expand_env(config.url) if config.url else None,
            headers={k: expand_env(v) for k, v in config.headers.items()},
            command=[expand_env(word) for word in config.command],
            env={k: expand_env(v) for k, v in config.env.items()},
            cwd=cwd,
            errlog=context.work_dir / "server.log" if config.command else None,
        )
        self._episode_headers = {k: expand_env(v) for k, v in config.episode_headers.items()}
        self._pool: SharedHttpTransport | None = None
        self._shared: McpConnection | None = None
        self._warm: WarmPool | None = None
        self._tools: list[ToolSpec] | None = None
        self._known: list[ToolSpec] | None = None
        """The tools last listed; kept after ``stop()`` for the manifest and the role map."""
        self._open: dict[str, McpSession] = {}
        self._http: httpx.AsyncClient | None = None

    @property
    def label(self) -> str:
        """``mcp:<name>``."""
        return f"mcp:{self.config.name}"

    def _connection(self, headers: dict[str, str] | None = None) -> McpConnection:
        endpoint = self.endpoint
        if headers:
            endpoint = McpEndpoint(**{**vars(endpoint), "headers": {**endpoint.headers, **headers}})
        if self.config.url and self._pool is None:
            self._pool = SharedHttpTransport(self.config.idle_s)
        return McpConnection(
            endpoint,
            call_timeout_s=self.config.call_timeout_s,
            idle_s=self.config.idle_s,
            transport=self._pool,
        )

    async def start(self) -> None:
        """Connect once and list the tools (a stdio server is spawned for it and, unless
        ``share_process``, stopped again)."""
        if self._tools is not None:
            return
        conn = self._connection()
        try:
            await conn.open()
            self._tools = await conn.list_tools()
            self._known = self._tools
            check_roles_offered(self, self.config.roles, self._tools)
        except BaseException:
            await conn.close()
            raise
        if self.config.share_process:
            self._shared = conn
        else:
            await conn.close()
        if self.config.warm_pool:
            self._warm = WarmPool(self._connection, self.config.warm_pool)
            self._warm.fill()

    @property
    def tool_roles(self) -> ToolRoles:
        """The configured role map over the reference names; once started, only the roles
        whose tool the sessions show."""
        roles = REFERENCE_ROLES.merged(self.config.roles)
        shown = self.known_tools()
        return roles if shown is None else roles.played(t.name for t in shown)

    async def stop(self) -> None:
        """Close every open session and the shared process or pool; safe to call twice."""
        sessions, self._open = list(self._open.values()), {}
        for session in sessions:
            await session.close()
        if self._shared is not None:
            await self._shared.close()
            self._shared = None
        if self._warm is not None:
            await self._warm.close()
            self._warm = None
        if self._pool is not None:
            await self._pool.close_pool()
            self._pool = None
        self._tools = None
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def describe(self) -> dict[str, Any]:
        """Kind, endpoint (without headers), session model and the efficiency source."""
        return {
            "kind": self.kind,
            "label": self.label,
            "endpoint": redact(self.config.url or " ".join(self.config.command)),
            "mcp_sessions": self._session_model(),
            "session_handle": self.config.session_tool.name
            if self.config.session_tool
            else "harness",
            "efficiency_source": self.efficiency_source,
            "sql_dialect": self.sql_dialect,
            "audit": self.config.audit.base_url if self.config.audit else None,
        }

    def _session_model(self) -> str:
        if self.config.share_process:
            return "shared"
        warm = self.config.warm_pool
        return f"per-episode (warm pool of {warm})" if warm else "per-episode"

    async def _listed(self) -> list[ToolSpec]:
        if self._tools is None:
            await self.start()
        assert self._tools is not None
        return self._tools

    def _shown(self, listed: list[ToolSpec]) -> list[ToolSpec]:
        cfg = self.config
        hidden = set(cfg.hide_tools) | ({cfg.session_tool.name} if cfg.session_tool else set())
        out = [s for s in listed if s.name not in hidden]
        for arg in cfg.injected():
            out = [hide_argument(s, arg) for s in out]
        return out

    async def shown_tools(self) -> list[ToolSpec]:
        """The tools the model sees: hidden ones and the session tool left out, injected
        arguments removed from the schemas (listed once per target)."""
        return self._shown(await self._listed())

    def known_tools(self, identity: str = "default") -> list[ToolSpec] | None:
        """Every session shows the same tools, known once the target started (and still
        after it stopped)."""
        return self._shown(self._known) if self._known is not None else None

    async def argument_names(self, tool: str) -> set[str]:
        """The argument names a tool declares."""
        for spec in await self._listed():
            if spec.name == tool:
                return set((spec.input_schema.get("properties") or {}).keys())
        return set()

    async def open_session(self, identity: str = "default") -> McpSession:
        """A new MCP session (or the shared stdio one) with its handle."""
        await self._listed()
        cfg = self.config
        handle = "hs_" + secrets.token_hex(8)
        shared = self._shared is not None
        headers = None if cfg.session_tool else with_handle(self._episode_headers, handle)
        if self._shared is not None:
            conn = self._shared
        elif self._warm is not None:
            conn = await self._warm.take()  # started and initialized; this session's own
        else:
            conn = self._connection(headers)
        try:
            await conn.open()
            if cfg.session_tool is not None:
                handle = await self._mint(conn, cfg.session_tool)
                if self._episode_headers:
                    conn.set_headers(with_handle(self._episode_headers, handle))
        except BaseException:
            if not shared:
                with contextlib.suppress(Exception):
                    await asyncio.shield(conn.close())
            raise
        session = McpSession(self, conn, handle, identity, owned=not shared)
        self._open[handle] = session
        return session

    async def _mint(self, conn: McpConnection, tool: SessionToolConfig) -> str:
        outcome = await conn.call(tool.name, dict(tool.arguments))
        if outcome.is_error:
            raise HarnessError(
                f"{self.label}: session tool {tool.name} failed: {outcome.text[:300]}"
            )
        try:
            value = json.loads(outcome.text)[tool.field]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise HarnessError(
                f"{self.label}: session tool {tool.name} returned no {tool.field!r}: "
                f"{outcome.text[:200]}"
            ) from exc
        if not isinstance(value, str) or not value:
            raise HarnessError(f"{self.label}: session tool {tool.name}: {tool.field} is {value!r}")
        return value

    async def end_episode(self, sessions: list[str]) -> None:
        """Close the MCP sessions the episode opened."""
        for handle in sessions:
            session = self._open.pop(handle, None)
            if session is not None:
                await session.close()

    async def read_audit(
        self, sessions: list[str], expected_calls: int, episode: str | None = None
    ) -> AuditCheck:
        """Read the audit API when configured; otherwise the harness trace is the source.
        (A third-party server mints no episode keys: rows are read by session.)"""
        cfg = self.config.audit
        if cfg is None:
            return await super().read_audit(sessions, expected_calls)
        key = cfg.admin_key
        if cfg.admin_key_env:
            key = os.environ.get(cfg.admin_key_env)
        if self._http is None:
            self._http = http_client()
        return await read_audit_http(httpx_get(self._http), cfg, key, sessions, expected_calls)


def _factory(config: McpTargetConfig, context: TargetContext) -> Target:
    return McpTarget(config, context)


KIND: Kind[Target, TargetContext] = Kind("mcp", McpTargetConfig, _factory)
"""The ``mcp`` target kind (named in the target registry)."""
