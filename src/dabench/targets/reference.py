"""The reference platform as a target: one ``dabench platform serve`` process per arm.

The target makes random keys (one identity per name in ``identities`` plus an admin key) and
hands them to the platform through an inherited pipe (``--auth-fd``: no key file, no key in
argv or the environment), starts the platform on a free loopback port, waits for ``/healthz``, and
stops it at the end (SIGTERM then SIGKILL; the child also dies with the harness). Each
episode session calls ``platform_info`` to obtain a ``dps_...`` handle; ``session_id`` is
hidden from the tool schemas the model sees and injected into every call.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import time
from pathlib import Path
from typing import Any, Literal

import httpx
import yaml
from pydantic import BaseModel, ConfigDict, Field

from dabench.errors import HarnessError, UserInputError
from dabench.fields import Name, Seconds
from dabench.journal.records import AuditCheck
from dabench.keepalive import SERVER_KEEP_ALIVE_S, client_idle_limit
from dabench.providers.base import ToolSpec
from dabench.targets.audit import (
    PAGE,
    AuditReaderConfig,
    check_audit,
    loopback_get,
    read_audit_http,
)
from dabench.targets.base import (
    Target,
    TargetContext,
    TargetSession,
    ToolConnection,
    ToolOutcome,
    hide_argument,
)
from dabench.targets.episode_batch import EpisodeBatcher
from dabench.targets.loopback_http import LoopbackHttp, PoolStats
from dabench.targets.mcp_connection import McpConnection, McpEndpoint
from dabench.targets.mcp_lean import LeanMcpConnection
from dabench.targets.process import SECRET_FD_ARG, ServerProcess, free_port
from dabench.targets.reference_episode import EPISODES, ReferenceEpisode
from dabench.targets.registry import Kind

SESSION_ARG = "session_id"
INFO_TOOL = "platform_info"
MAX_CLOSED_AUDITS = 10_000
"""Closed episodes whose audit rows wait for :meth:`ReferenceTarget.read_audit`, at most (an
episode without sessions is never read back; the oldest are dropped)."""


class ReferenceTargetConfig(BaseModel):
    """``target: {kind: reference, profile: a2}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["reference"] = "reference"
    profile: str = "a0"
    """A profile name shipped with the platform (a0..a3) or a path to a profile file."""
    identities: list[Name] = Field(
        default_factory=lambda: ["default", "teacher", "learner"], min_length=1
    )
    reviewers: list[Name] = Field(default_factory=lambda: ["reviewer"])
    """Identities with the reviewer persona (they may apply knowledge)."""
    startup_timeout_s: Seconds = 60.0
    call_timeout_s: Seconds = 120.0
    extra_args: list[str] = Field(default_factory=list)
    """More ``dabench platform serve`` arguments."""
    warehouse: str | None = Field(default=None, pattern=r"^postgres(ql)?://")
    """Serve SQL from this PostgreSQL warehouse (a read-only role's DSN; ``platform serve
    --warehouse``) instead of the world's DuckDB file. Keep a password out of it (PGPASSWORD
    or ~/.pgpass): the run manifest records the target."""
    world: str | None = None
    """Serve this world directory instead of the experiment's (relative paths: to the
    experiment file), e.g. an external world over a dbt project's mart file
    (``world.yaml`` with ``kind: warehouse``); tasks are still graded on the experiment's
    world. The manifest records the served world's hash."""
    keep_alive_s: Seconds = SERVER_KEEP_ALIVE_S
    """The platform closes keep-alive connections idle this long; the harness's clients close
    theirs at 80 % of it (:func:`~dabench.keepalive.client_idle_limit`), so neither side
    reuses a connection the other is closing."""
    client_idle_s: Seconds | None = None
    """Override the clients' idle limit (seconds; default 80 % of ``keep_alive_s``). Above
    the keep-alive only to test that connections the platform closed are still never used."""
    client: Literal["lean", "sdk"] = "lean"
    """MCP client: ``lean`` (stateless streamable HTTP, ~5x less harness CPU per call) or
    ``sdk`` (the official client)."""


class ReferenceSession(TargetSession):
    """One ``dps_...`` session on the reference platform."""

    def __init__(
        self,
        conn: ToolConnection,
        handle: str,
        identity: str,
        cache: dict[str, list[ToolSpec]] | None = None,
    ) -> None:
        self.conn = conn
        self.handle = handle
        self.identity = identity
        self._cache = cache if cache is not None else {}

    async def tools(self) -> list[ToolSpec]:
        """Every tool but ``platform_info``, with ``session_id`` hidden."""
        specs = await self.conn.list_tools()
        shown = [hide_argument(s, SESSION_ARG) for s in specs if s.name != INFO_TOOL]
        self._cache[self.identity] = shown
        return list(shown)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Call with the session handle injected (a model-supplied one is overwritten)."""
        return await self.conn.call(name, {**arguments, SESSION_ARG: self.handle})


def checked_profile(profile: str, experiment_dir: Path) -> str:
    """``profile`` loaded and validated now, before a run directory is made (the platform
    process loads it again): a shipped name as it is, a file path resolved against the
    experiment's directory (else the working directory) and made absolute."""
    from dabench.platform.profile import SHIPPED_PROFILES, load_profile

    if profile in SHIPPED_PROFILES:
        resolved = profile
    else:
        path = Path(profile)
        beside = path if path.is_absolute() else experiment_dir / path
        resolved = str((beside if beside.is_file() else path).resolve())
    try:
        load_profile(resolved)
    except UserInputError as exc:
        raise UserInputError(f"target.profile {profile!r}: {exc}") from exc
    return resolved


class ReferenceTarget(Target):
    """The reference platform started for one arm."""

    kind = "reference"
    efficiency_source = "platform"

    def __init__(self, config: ReferenceTargetConfig, context: TargetContext) -> None:
        if context.world_dir is None:
            raise UserInputError("the reference target needs a world directory")
        self.config = config
        self.context = context
        self.profile_arg = checked_profile(config.profile, context.experiment_dir)
        """The profile as ``platform serve --profile`` gets it (a file path made absolute)."""
        self.sql_dialect = "postgres" if config.warehouse else "duckdb"
        self.port = 0
        self.admin_key = "adm-" + secrets.token_hex(16)
        self.keys = {
            name: f"key-{name}-" + secrets.token_hex(12)
            for name in [*config.identities, *config.reviewers]
        }
        self.process: ServerProcess | None = None
        self.detached = False
        """Start the platform as a detached process that outlives this one (``dabench play``)."""
        self.health: dict[str, Any] = {}
        self._conns: dict[str, ToolConnection] = {}
        self._conn_lock = asyncio.Lock()
        self._loopback: LoopbackHttp | None = None
        self._closed_audit: dict[str, list[dict[str, Any]]] = {}
        """Episode id -> its audit rows as the platform returned them when it was closed,
        until :meth:`read_audit` takes them."""
        self._shown_tools: dict[str, list[ToolSpec]] = {}
        self._episode_batches = EpisodeBatcher(
            lambda body: self.admin("POST", f"{EPISODES}/batch", body), PAGE
        )
        """Episode opens and closes (those that pile up while one is out go together)."""
        self.cpu_at_ready: float | None = None
        """Platform CPU seconds when it became healthy (start-up cost)."""
        self.cpu_at_stop: float | None = None
        """Platform CPU seconds just before it was stopped."""
        self.pool_stats = PoolStats()
        """What the lean clients' connection pools did, summed when they close (at stop)."""

    @property
    def label(self) -> str:
        """``reference:<profile>``."""
        return f"reference:{Path(self.config.profile).stem}"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def auth_yaml(self) -> bytes:
        """The platform's ``--auth`` YAML: the identities' and the admin key (handed to the
        platform through an inherited pipe, never written to disk)."""
        identities = [
            {
                "key": key,
                "user": name,
                "persona": "reviewer" if name in self.config.reviewers else "analyst",
            }
            for name, key in self.keys.items()
        ]
        text = yaml.safe_dump({"identities": identities, "admin_keys": [self.admin_key]})
        return text.encode("utf-8")

    def served_world(self) -> Path:
        """The world directory the platform serves (``world``, else the experiment's)."""
        if self.config.world is None:
            assert self.context.world_dir is not None
            return self.context.world_dir
        path = Path(self.config.world)
        path = path if path.is_absolute() else self.context.experiment_dir / path
        if not path.is_dir():
            raise UserInputError(f"target.world {self.config.world!r}: no such directory ({path})")
        return path.resolve()

    async def start(self) -> None:
        """Start the platform and wait until ``/healthz`` answers."""
        if self.process is not None and self.process.running():
            return
        self.port = free_port()
        world = self.served_world()
        argv = [
            sys.executable, "-m", "dabench.cli", "platform", "serve",
            "--world", str(world), "--profile", self.profile_arg,
            "--host", "127.0.0.1", "--port", str(self.port), "--transport", "http",
            "--auth-fd", SECRET_FD_ARG, "--state-dir", str(self.context.work_dir / "state"),
            "--keep-alive-s", str(self.config.keep_alive_s),
            *(["--warehouse", self.config.warehouse] if self.config.warehouse else []),
            *self.config.extra_args,
        ]  # fmt: skip
        self.process = ServerProcess(
            argv,
            self.context.work_dir / "platform.log",
            detached=self.detached,
            secret_input=self.auth_yaml(),
        )
        self.process.start()
        try:
            await self._wait_healthy()
        except BaseException:
            await self.process.stop()
            raise

    async def _wait_healthy(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.config.startup_timeout_s
        async with httpx.AsyncClient(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if not self.process.running():
                    raise HarnessError(
                        f"platform ({self.label}) exited during start-up:\n"
                        f"{self.process.log_tail()}"
                    )
                try:
                    resp = await client.get(self.base_url + "/healthz")
                    if resp.status_code == 200:
                        self.health = resp.json()
                        self.cpu_at_ready = self.process.cpu_seconds()
                        return
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.1)
        raise HarnessError(
            f"platform ({self.label}) not healthy after {self.config.startup_timeout_s:.0f}s:\n"
            f"{self.process.log_tail()}"
        )

    async def stop(self) -> None:
        """Close the connections and stop the process (SIGTERM, then SIGKILL)."""
        conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            if isinstance(conn, LeanMcpConnection) and conn.pool is not None:
                self.pool_stats.add(conn.pool.stats)
            await conn.close()
        if self._loopback is not None:
            self.pool_stats.add(self._loopback.stats)
            await self._loopback.aclose()
            self._loopback = None
        if self.process is not None:
            if self.process.running():
                self.cpu_at_stop = self.process.cpu_seconds()
            await self.process.stop()

    def describe(self) -> dict[str, Any]:
        """Kind, profile, profile hash, platform version, world hash and SQL dialect (which
        warehouse served it) from ``/healthz``."""
        return {
            "kind": self.kind,
            "label": self.label,
            "profile": self.config.profile,
            "profile_hash": self.health.get("profile_hash"),
            "platform_version": self.health.get("version"),
            "world_hash": self.health.get("world_hash"),
            "sql_dialect": self.health.get("sql_dialect"),
            "efficiency_source": self.efficiency_source,
        }

    async def connection(self, identity: str) -> ToolConnection:
        """The MCP connection authenticated as ``identity`` (opened on first use)."""
        if identity not in self.keys:
            raise HarnessError(f"{self.label}: unknown identity {identity!r}")
        async with self._conn_lock:
            conn = self._conns.get(identity)
            if conn is None:
                url = self.base_url + "/mcp"
                headers = {"Authorization": f"Bearer {self.keys[identity]}"}
                timeout, idle = self.config.call_timeout_s, self.idle_s
                conn = (
                    LeanMcpConnection(url, headers, call_timeout_s=timeout, idle_s=idle)
                    if self.config.client == "lean"
                    else McpConnection(
                        McpEndpoint(url, headers), call_timeout_s=timeout, idle_s=idle
                    )
                )
                await conn.open()
                self._conns[identity] = conn
            return conn

    async def keyed_connection(self, identity: str, key: str) -> ToolConnection:
        """A connection authenticated with another key of ``identity`` (an episode's): over
        the lean client it shares the identity's pool and tool list."""
        base = await self.connection(identity)
        headers = {"Authorization": f"Bearer {key}"}
        if isinstance(base, LeanMcpConnection):
            return base.with_headers(headers)
        url = self.base_url + "/mcp"
        conn = McpConnection(
            McpEndpoint(url, headers), call_timeout_s=self.config.call_timeout_s, idle_s=self.idle_s
        )
        await conn.open()
        return conn

    async def begin_episode(self, label: str) -> ReferenceEpisode:
        """Open an episode on the platform: the default identity's key is minted now, the
        others when the episode first acts as them."""
        first = "default" if "default" in self.keys else next(iter(self.keys))
        opened = await self._episode_batches.open(label[:1000], [first])
        return ReferenceEpisode(self, str(opened["episode_id"]), dict(opened["keys"]))

    async def mint_key(self, episode_id: str, identity: str) -> str:
        """A key of ``identity`` bound to an open episode."""
        if identity not in self.keys:
            raise HarnessError(f"{self.label}: unknown identity {identity!r}")
        minted = await self.admin("POST", f"{EPISODES}/{episode_id}/keys", {"user": identity})
        return str(minted["key"])

    async def close_episode(self, episode_id: str) -> None:
        """Revoke every key of an episode. The platform answers with the episode's audit rows
        (read once the keys are revoked); :meth:`read_audit` uses them instead of asking
        again when they are complete."""
        try:
            closed = await self._episode_batches.close(episode_id)
        except HarnessError as exc:
            raise HarnessError(f"closing episode {episode_id} failed: {exc}") from exc
        page = closed.get("audit") if isinstance(closed, dict) else None
        if not isinstance(page, dict) or not isinstance(page.get("events"), list):
            return
        events, total = page["events"], page.get("total")
        if isinstance(total, int) and len(events) >= total:
            while len(self._closed_audit) >= MAX_CLOSED_AUDITS:
                self._closed_audit.pop(next(iter(self._closed_audit)))
            self._closed_audit[episode_id] = events

    async def open_session(self, identity: str = "default") -> ReferenceSession:
        """Call ``platform_info`` to open a fresh ``dps_...`` session (with the identity's
        static key: an episode opens its sessions through :meth:`begin_episode`'s view)."""
        return await self.open_session_on(await self.connection(identity), identity)

    async def open_session_on(self, conn: ToolConnection, identity: str) -> ReferenceSession:
        """Open a session through ``conn`` (authenticated as ``identity``)."""
        outcome = await conn.call(INFO_TOOL, {})
        if outcome.is_error:
            raise HarnessError(f"{self.label}: platform_info failed: {outcome.text[:300]}")
        try:
            handle = str(json.loads(outcome.text)[SESSION_ARG])
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise HarnessError(
                f"{self.label}: platform_info returned no session_id: {outcome.text[:200]}"
            ) from exc
        return ReferenceSession(conn, handle, identity, self._shown_tools)

    def known_tools(self, identity: str = "default") -> list[ToolSpec] | None:
        """The tools an earlier session of ``identity`` showed (the same for every session)."""
        tools = self._shown_tools.get(identity)
        return list(tools) if tools is not None else None

    @property
    def idle_s(self) -> float:
        """The idle limit of the harness's connections to this platform."""
        if self.config.client_idle_s is not None:
            return self.config.client_idle_s
        return client_idle_limit(self.config.keep_alive_s)

    def _admin_http(self) -> LoopbackHttp:
        """The loopback client of the admin API and audit reads (one pool per target: a
        general-purpose client's pool scan per request cost more CPU than the request)."""
        if self._loopback is None:
            self._loopback = LoopbackHttp(self.base_url, timeout_s=30.0, idle_s=self.idle_s)
        return self._loopback

    async def read_audit(
        self, sessions: list[str], expected_calls: int, episode: str | None = None
    ) -> AuditCheck:
        """The platform's audit rows of the episode (every row of its keys; else of its
        sessions) vs. our count."""
        cfg = AuditReaderConfig(base_url=self.base_url)
        rows = self._closed_audit.pop(episode, None) if episode is not None else None
        if rows is not None:
            return check_audit(rows, expected_calls, cfg.tool_call_kinds, sessions, 0, episode)
        get = loopback_get(self._admin_http())
        return await read_audit_http(
            get, cfg, self.admin_key, sessions, expected_calls, episode=episode
        )

    async def admin(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: dict[str, str | int] | None = None,
    ) -> Any:
        """Call the admin API (``/api/v1/admin/...``) with the admin key (for protocols)."""
        headers = {"Authorization": f"Bearer {self.admin_key}"}
        payload = b""
        if body is not None:
            payload = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        try:
            resp = await self._admin_http().request(
                method, path, headers=headers, body=payload, params=params
            )
        except HarnessError as exc:
            raise HarnessError(f"admin {method} {path} failed: {exc}") from exc
        if resp.status >= 400:
            text = resp.body.decode("utf-8", "replace")
            raise HarnessError(f"admin {method} {path} -> HTTP {resp.status}: {text}")
        return json.loads(resp.body) if resp.body else None


def _factory(config: ReferenceTargetConfig, context: TargetContext) -> Target:
    return ReferenceTarget(config, context)


KIND: Kind[Target, TargetContext] = Kind("reference", ReferenceTargetConfig, _factory)
"""The ``reference`` target kind (named in the target registry)."""
