"""Any MCP server as a target: a stdio command or a streamable-HTTP URL.

Without an ``audit`` reader the target has no audit API: efficiency comes from the
harness's own trace and the manifest says so (``efficiency_source: harness``). The harness
mints a session handle per episode; when ``session_argument`` is set it is hidden from the
tool schemas and injected into every call, as for the reference platform.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, model_validator

from dabench.errors import UserInputError
from dabench.journal.records import AuditCheck
from dabench.keepalive import DEFAULT_CLIENT_IDLE_S
from dabench.providers.base import ToolSpec
from dabench.roles import REFERENCE_ROLES, ToolRoles
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
from dabench.targets.mcp_connection import McpConnection, McpEndpoint
from dabench.targets.registry import register_target

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: str) -> str:
    """Replace ``${VAR}`` with the environment variable (missing -> a clear error)."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in os.environ:
            raise UserInputError(f"environment variable {name} is not set (used in {value!r})")
        return os.environ[name]

    return _ENV_REF.sub(sub, value)


class McpTargetConfig(BaseModel):
    """``target: {kind: mcp, command: [npx, ...]}`` or ``{kind: mcp, url: http://.../mcp}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["mcp"] = "mcp"
    name: str = "mcp"
    """Label used in episodes (``mcp:<name>``)."""
    command: list[str] = Field(default_factory=list)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers; ``${VAR}`` is expanded from the environment."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for a stdio server; ``${VAR}`` is expanded."""
    cwd: str | None = None
    session_argument: str | None = None
    """Name of a tool argument that carries the session handle (hidden and injected)."""
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
    call_timeout_s: float = 120.0
    idle_s: float = Field(default=DEFAULT_CLIENT_IDLE_S, gt=0)
    """Close HTTP connections idle this many seconds instead of reusing them; keep it below
    the server's keep-alive (4 s suits uvicorn's and Node's 5 s)."""

    @model_validator(mode="after")
    def _one_endpoint(self) -> McpTargetConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("an mcp target needs exactly one of 'command' or 'url'")
        return self


class McpSession(TargetSession):
    """A harness-minted session on a shared connection."""

    def __init__(self, target: McpTarget, handle: str, identity: str) -> None:
        self.target = target
        self.handle = handle
        self.identity = identity

    async def tools(self) -> list[ToolSpec]:
        """The server's tools minus hidden ones, the session argument hidden."""
        cfg = self.target.config
        specs = await self.target.conn.list_tools()
        out = [s for s in specs if s.name not in cfg.hide_tools]
        if cfg.session_argument:
            out = [hide_argument(s, cfg.session_argument) for s in out]
        return out

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Call the tool, injecting the handle where the tool takes it."""
        arg = self.target.config.session_argument
        if arg and arg in await self.target.argument_names(name):
            arguments = {**arguments, arg: self.handle}
        return await self.target.conn.call(name, arguments)


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
        self.conn = McpConnection(
            McpEndpoint(
                url=config.url,
                headers={k: expand_env(v) for k, v in config.headers.items()},
                command=list(config.command),
                env={k: expand_env(v) for k, v in config.env.items()},
                cwd=cwd,
            ),
            call_timeout_s=config.call_timeout_s,
            idle_s=config.idle_s,
        )
        self._started = False
        self._tools: list[ToolSpec] | None = None
        self._http: httpx.AsyncClient | None = None

    @property
    def label(self) -> str:
        """``mcp:<name>``."""
        return f"mcp:{self.config.name}"

    async def start(self) -> None:
        """Connect (spawning the stdio server)."""
        if not self._started:
            await self.conn.open()
            self._tools = await self.conn.list_tools()
            self._started = True
            check_roles_offered(self, self.config.roles, self._tools)

    def known_tools(self, identity: str = "default") -> list[ToolSpec] | None:
        """Every session shows the same tools, known once the target started."""
        if self._tools is None:
            return None
        cfg = self.config
        out = [s for s in self._tools if s.name not in cfg.hide_tools]
        if cfg.session_argument:
            out = [hide_argument(s, cfg.session_argument) for s in out]
        return out

    @property
    def tool_roles(self) -> ToolRoles:
        """The configured role map over the reference names; once started, only the roles
        whose tool the sessions show."""
        roles = REFERENCE_ROLES.merged(self.config.roles)
        shown = self.known_tools()
        return roles if shown is None else roles.played(t.name for t in shown)

    async def stop(self) -> None:
        """Disconnect (the SDK stops a stdio server)."""
        await self.conn.close()
        self._started = False
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def describe(self) -> dict[str, Any]:
        """Kind, endpoint (without headers) and the efficiency source."""
        return {
            "kind": self.kind,
            "label": self.label,
            "endpoint": self.config.url or " ".join(self.config.command),
            "efficiency_source": self.efficiency_source,
            "sql_dialect": self.sql_dialect,
            "audit": self.config.audit.base_url if self.config.audit else None,
        }

    async def argument_names(self, tool: str) -> set[str]:
        """The argument names a tool declares."""
        for spec in await self.conn.list_tools():
            if spec.name == tool:
                return set((spec.input_schema.get("properties") or {}).keys())
        return set()

    async def open_session(self, identity: str = "default") -> McpSession:
        """A fresh harness-minted session handle."""
        return McpSession(self, "hs_" + secrets.token_hex(8), identity)

    async def read_audit(self, sessions: list[str], expected_calls: int) -> AuditCheck:
        """Read the audit API when configured; otherwise the harness trace is the source."""
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


register_target("mcp", McpTargetConfig, _factory)
