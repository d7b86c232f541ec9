"""What an agent talks to: a :class:`Target` (started once per arm) and its sessions.

A :class:`TargetSession` is one episode's (or one identity's) view of a target: the tools the
model may see (the harness-minted session handle hidden from their schemas) and a ``call``
that injects the handle. :meth:`Target.read_audit` reads the target's own audit rows for the
sessions of an episode back and checks them against the harness's count of tool calls.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from dabench.errors import UserInputError
from dabench.journal.records import AuditCheck
from dabench.providers.base import ToolSpec
from dabench.roles import REFERENCE_ROLES, ToolRoles

EfficiencySource = Literal["platform", "harness"]
SqlDialect = Literal["duckdb", "postgres", "sqlite"]
"""The SQL dialect a target's SQL tool speaks (the oracle sends its truth SQL in it)."""


@dataclass
class ToolOutcome:
    """What one tool call returned."""

    text: str
    is_error: bool = False
    error_code: str | None = None
    latency_ms: float = 0.0
    started_at: datetime | None = None


@dataclass
class TargetContext:
    """What a target factory may need from the experiment."""

    world_dir: Path | None
    """The built world (the reference platform serves it)."""
    work_dir: Path
    """A scratch directory for this target (auth file, state, logs)."""
    experiment_dir: Path = field(default_factory=Path.cwd)
    """Relative paths in the target config resolve against this."""
    shared: dict[str, Any] = field(default_factory=dict)
    """One dict per run, the same object in every arm's context: state the run's targets
    coordinate through (e.g. the Kibana set-up registry)."""


def error_code_of(text: str) -> str | None:
    """The structured error code of a tool error text ``{"error": {"code": ...}}``, if any."""
    try:
        body = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = body["error"].get("code")
        return str(code) if code is not None else None
    return None


class ToolCallTimer:
    """Started when a tool call is sent; builds the call's :class:`ToolOutcome` with its
    start time and latency."""

    def __init__(self) -> None:
        self.started = datetime.now(UTC)
        self._t0 = time.perf_counter()

    def outcome(self, text: str, is_error: bool) -> ToolOutcome:
        """The tool's reply; an error reply's code is read from its text."""
        return self._outcome(text, is_error, error_code_of(text) if is_error else None)

    def protocol_error(self, text: str) -> ToolOutcome:
        """The server refused the request itself (unknown tool, invalid params): the model's
        mistake, returned to it as a ``PROTOCOL_ERROR`` tool error."""
        return self._outcome(text, True, "PROTOCOL_ERROR")

    def _outcome(self, text: str, is_error: bool, error_code: str | None) -> ToolOutcome:
        return ToolOutcome(
            text=text,
            is_error=is_error,
            error_code=error_code,
            latency_ms=(time.perf_counter() - self._t0) * 1000,
            started_at=self.started,
        )


def hide_argument(spec: ToolSpec, name: str) -> ToolSpec:
    """The tool spec without argument ``name`` (the harness injects it)."""
    schema: dict[str, Any] = dict(spec.input_schema)
    props = dict(schema.get("properties") or {})
    if name not in props:
        return spec
    props.pop(name)
    schema["properties"] = props
    if "required" in schema:
        schema["required"] = [r for r in schema["required"] if r != name]
    return ToolSpec(name=spec.name, description=spec.description, input_schema=schema)


def check_roles_offered(target: Target, roles: ToolRoles | None, listed: list[ToolSpec]) -> None:
    """Refuse (:class:`~dabench.errors.UserInputError`) configured role bindings whose tool
    the server does not list."""
    names = [t.name for t in listed]
    missing = (roles or ToolRoles({})).missing_tools(names)
    if missing:
        raise UserInputError(
            f"{target.label}: {'; '.join(missing)} (it offers: {', '.join(names)})"
        )


@runtime_checkable
class ToolConnection(Protocol):
    """A connection that lists and calls MCP tools (official or lean client)."""

    async def open(self) -> None:
        """Connect."""
        ...

    async def close(self) -> None:
        """Disconnect; safe to call twice."""
        ...

    async def list_tools(self) -> list[ToolSpec]:
        """The server's tools."""
        ...

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Call a tool."""
        ...


class TargetSession(ABC):
    """One session on a target: tools with the handle hidden, calls with it injected."""

    handle: str
    """The session handle the harness minted (or the platform issued)."""
    identity: str

    @abstractmethod
    async def tools(self) -> list[ToolSpec]:
        """The tools the agent may call, as the model sees them."""

    @abstractmethod
    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Call a tool. Tool errors come back as an outcome with ``is_error``; an
        infrastructure failure raises :class:`~dabench.errors.HarnessError`."""

    async def close(self) -> None:
        """Release the session (default: nothing to do)."""
        return None


class Target(ABC):
    """A system under test, started once per arm and shared by its episodes."""

    kind: str
    efficiency_source: EfficiencySource = "harness"
    sql_dialect: SqlDialect = "duckdb"
    episode_id: str | None = None
    """Set on an episode's view (:meth:`begin_episode`): the target's id of the episode."""

    @property
    def tool_roles(self) -> ToolRoles:
        """Which of the target's tools play the roles ``sql``, ``search``... (default: the
        reference platform's names)."""
        return REFERENCE_ROLES

    @property
    @abstractmethod
    def label(self) -> str:
        """Short label for episodes, e.g. ``reference:a2`` or ``mcp:everything``."""

    @abstractmethod
    async def start(self) -> None:
        """Start (or connect to) the target; idempotent."""

    @abstractmethod
    async def stop(self) -> None:
        """Stop the target and release everything it holds; safe to call twice."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What the manifest records about the target (kind, profile, hashes, version)."""

    @abstractmethod
    async def open_session(self, identity: str = "default") -> TargetSession:
        """Open a fresh session for one episode as ``identity``."""

    async def begin_episode(self, label: str) -> Target:
        """The target as one episode sees it (the runner plays the episode on it and ends it
        with :meth:`end_episode`); default: the target itself, nothing bound to the episode.
        The reference platform mints identity keys for the episode alone."""
        return self

    async def end_episode(self, sessions: list[str]) -> None:
        """Release what the episode's sessions hold (called by the runner when the agent's
        part of an episode ends, whatever happened); default: nothing to release."""
        return None

    def known_tools(self, identity: str = "default") -> list[ToolSpec] | None:
        """The tools a session of ``identity`` will show, when already known without opening
        one (lets an agent call the model while its session opens); default: unknown."""
        return None

    async def read_audit(
        self, sessions: list[str], expected_calls: int, episode: str | None = None
    ) -> AuditCheck:
        """Check the target's audit rows for ``sessions`` (for every row of ``episode``'s
        keys, when the target bound keys to it) against our own count. Targets without an
        audit store return a ``harness``-sourced check that is always ok."""
        return AuditCheck(
            source="harness",
            expected_calls=expected_calls,
            audit_rows=expected_calls,
            ok=True,
            detail="the target has no audit API: efficiency comes from the harness trace",
        )


class DelegatingTarget(Target):
    """A view of another target (``inner``) that forwards what it does not change: the
    label, role map, description and start. The view never stops the inner target (the
    runner does). Subclasses bind something to the view, such as an identity or an episode."""

    def __init__(self, inner: Target) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.efficiency_source = inner.efficiency_source
        self.sql_dialect = inner.sql_dialect

    @property
    def label(self) -> str:
        """The inner target's label."""
        return self.inner.label

    @property
    def tool_roles(self) -> ToolRoles:
        """The inner target's role map."""
        return self.inner.tool_roles

    async def start(self) -> None:
        """Start the inner target (idempotent; the runner has usually started it)."""
        await self.inner.start()

    async def stop(self) -> None:
        """The runner stops the inner target; nothing to do here."""
        return None

    def describe(self) -> dict[str, Any]:
        """The inner target's description."""
        return self.inner.describe()
