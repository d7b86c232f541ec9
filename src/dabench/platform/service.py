"""The transport-independent platform: resolve the caller, run one tool, audit it.

:class:`PlatformService` is what the MCP server (HTTP and stdio) and the admin API call.
Tool calls are synchronous and thread-safe; the MCP layer runs each in a worker thread.
"""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import json
import logging
import threading
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import sniffio
from pydantic import BaseModel, ValidationError

from dabench import __version__
from dabench.errors import UserInputError
from dabench.platform.admin.audit import UNAUTHENTICATED, AuditStore, EventKind
from dabench.platform.admin.auth import AuthConfig, Identity
from dabench.platform.admin.episodes import MAX_OPEN_EPISODES, EpisodeKeys, episode_of
from dabench.platform.errors import ToolError
from dabench.platform.fair_share import QueryScheduler
from dabench.platform.knowledge.enrichment import (
    NO_ENRICHMENT,
    Enrichment,
    dataset_block,
    enrich_datasets,
    summarize_datasets,
)
from dabench.platform.knowledge.memory import MemoryService
from dabench.platform.knowledge.view import KnowledgeView
from dabench.platform.profile import ALL_TOOLS, Profile
from dabench.platform.search.kinds import KIND_PREFIX, PREFIX_KIND
from dabench.platform.sessions import PlatformSession, SessionRegistry
from dabench.platform.state import Insight, StateStore
from dabench.platform.storage import Database
from dabench.platform.tools import (
    TOOL_ARGS,
    ApplyKnowledgeArgs,
    DescribeTableArgs,
    FetchArgs,
    ListTablesArgs,
    MemoryCaptureArgs,
    MemoryManageArgs,
    SearchArgs,
    SqlQueryArgs,
    input_schema,
    profile_tool,
)
from dabench.platform.warehouse import (
    DEFAULT_SQL_THREADS,
    DIALECT_NAMES,
    DuckDBWarehouse,
    QueryResult,
    WarehouseLimits,
    open_warehouse,
)
from dabench.platform.warehouse.base import QueryCancel, cancelled_error
from dabench.world.model import Catalog, KnowledgePage

logger = logging.getLogger(__name__)

SERVER_NAME = "dabench-platform"
MAX_REQUEST_CHARS = 256_000
"""Tool arguments larger than this (serialised) are refused with ``INPUT_TOO_LARGE``."""

if TYPE_CHECKING:
    from dabench.platform.search.engine import SearchEngine


_Ran = tuple[tuple[str, ...], QueryResult]
"""A query's referenced tables and result (what a warehouse's ``guarded_run`` returns)."""

_LOOP_TOOLS = frozenset({"platform_info", "sql_query"})
""":meth:`PlatformService.acall` runs these on the event loop (their query, if any, on an
idle SQL worker awaited through the loop); every other tool runs on a thread."""


@dataclass
class _SqlWork:
    """The query a tool call's steps need run (:meth:`PlatformService._call_steps`)."""

    user: str
    session: str
    culprit: str
    """Whom the query penalizes if it costs its worker (``fair_share``)."""
    sql: str
    limit: int
    low_priority: bool
    stats: dict[str, float]
    """The call's figures: the runner sets ``queue_ms``."""
    cancel: QueryCancel | None = None
    """Set while the query runs on a thread for a call that may be cancelled."""


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call returns to the transport."""

    payload: dict[str, Any]
    is_error: bool
    text: str


@dataclass(frozen=True)
class WorldContent:
    """The parts of a built world the platform serves."""

    catalog: Catalog
    pages: list[KnowledgePage]
    warehouse_path: Path
    world_hash: str
    warehouse_dsn: str | None = None
    """An external PostgreSQL world's DSN (its data fingerprint stands for the export's
    recorded world hash)."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool as listed to a client."""

    name: str
    description: str
    input_schema: dict[str, Any]


def _validation_message(exc: ValidationError) -> str:
    """One line per argument error (at most five): ``field: message``; a rule over the whole
    call (``insight_id is required when action is 'forget'``) without pydantic's prefix."""
    parts = []
    for err in exc.errors()[:5]:
        msg = err["msg"].removeprefix("Value error, ")
        loc = ".".join(str(x) for x in err["loc"])
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def warehouse_limits(profile: Profile, state_dir: Path) -> WarehouseLimits:
    """DuckDB's resource limits from the profile; spills default to ``<state-dir>/duckdb-tmp``."""
    sql = profile.sql
    temp = Path(sql.temp_directory) if sql.temp_directory else state_dir / "duckdb-tmp"
    return WarehouseLimits(
        memory_limit=sql.memory_limit,
        workers=sql.workers,
        temp_directory=temp.resolve(),
        max_temp_directory_size=sql.max_temp_directory_size,
    )


class PlatformService:
    """One platform instance: a world, a profile, identities, state and the audit log."""

    def __init__(
        self,
        world: WorldContent,
        profile: Profile,
        auth: AuthConfig,
        state_dir: Path,
        audit_dsn: str | None = None,
        sql_threads: int = DEFAULT_SQL_THREADS,
        warehouse_dsn: str | None = None,
    ) -> None:
        missing = sorted({i.persona for i in auth.identities} - set(profile.personas))
        if missing:
            raise UserInputError(
                f"auth identities use persona(s) {missing} that profile {profile.name!r} does "
                f"not define (it has {sorted(profile.personas)})"
            )
        self.world = world
        self.profile = profile
        self.auth = auth
        external_dsn = warehouse_dsn is None and world.warehouse_dsn is not None
        warehouse_dsn = warehouse_dsn or world.warehouse_dsn
        self.warehouse = open_warehouse(
            world.warehouse_path,
            dsn=warehouse_dsn,
            threads=sql_threads,
            limits=warehouse_limits(profile, state_dir),
            expected_tables=frozenset(ds.id for ds in world.catalog.datasets),
            world_hash=None if external_dsn else world.world_hash,
        )
        sql = profile.sql
        self.scheduler = QueryScheduler(
            min(self.warehouse.slots, sql.workers) if warehouse_dsn else self.warehouse.slots,
            sql.per_user_queries,
            sql.per_session_queries,
        )
        self.tables = dict(self.warehouse.tables())
        self.sql_scope = self.warehouse.scope()
        if audit_dsn:
            audit_db = Database(dsn=audit_dsn)
            state_db = Database(dsn=audit_dsn)
        else:
            audit_db = Database(sqlite_path=state_dir / "audit.sqlite")
            state_db = Database(sqlite_path=state_dir / "state.sqlite")
        self.audit = AuditStore(audit_db)
        self.state = StateStore(state_db)
        self.view = KnowledgeView(world.catalog, world.pages, self.state)
        self.sessions = SessionRegistry(state_db)
        self._search_engine: SearchEngine | None = None
        if "search" in profile.tools and self.search_engine.embedding_model is not None:
            # Embed the world's documents now, not inside the first session's first search
            # (MiniLM takes seconds): its audited duration would otherwise carry the cost.
            self.search_engine.warm("", [])
        self.memory = MemoryService(self.state, self.view, profile.memory.supersede_threshold)
        self.episodes = EpisodeKeys()
        self._specs: dict[str, list[ToolSpec]] = {}
        self._allowed: dict[str, frozenset[str]] = {}
        self._info = {
            "name": SERVER_NAME,
            "version": __version__,
            "profile": profile.name,
            "profile_hash": profile.profile_hash,
            "world_hash": world.world_hash,
            "sql_dialect": self.warehouse.dialect,
        }
        """:meth:`info`: the profile and world are fixed for the service's life, and hashing
        the profile cost more than the rest of a ``platform_info`` call."""
        self._features: dict[str, Any] = {
            "enrichment": profile.enrichment.enabled,
            "search_first_gate": profile.gate.search_first,
            "memory": profile.memory.enabled,
            "search_kinds": list(profile.search.kinds),
            **self._search_features(),
        }

    # ------------------------------------------------------------------ callers

    def identify(self, key: str | None) -> Identity | None:
        """The caller holding ``key``: a static identity of the auth config or an open
        episode's key (:class:`~dabench.platform.admin.episodes.EpisodeIdentity`)."""
        if not key:
            return None
        return self.auth.identity_for(key) or self.episodes.identify(key)

    def _session_for(
        self, presented: str | None, identity: Identity
    ) -> tuple[PlatformSession | None, bool]:
        """The caller's own session for a presented handle, and whether the handle is a
        session of another episode (or of no episode, presented with an episode key, or the
        reverse): such a call is refused with ``SESSION_OF_ANOTHER_EPISODE``."""
        found = self.sessions.lookup(presented) if presented else None
        if found is None:
            return None, False
        episode = episode_of(identity)
        if found.episode_id != episode and (found.user == identity.user or episode):
            return None, True
        if found.user != identity.user:
            return None, False
        return found, False

    # ------------------------------------------------------------------ listing

    def tool_specs(self, identity: Identity) -> list[ToolSpec]:
        """The tools ``identity``'s persona may see under this profile."""
        specs = self._specs.get(identity.persona)
        if specs is None:
            p = self.profile
            specs = []
            for name in p.tools_for(identity.persona):
                description, schema = profile_tool(
                    name, max_sql_chars=p.sql.max_sql_chars,
                    row_limit_default=p.sql.row_limit_default,
                    row_limit_max=p.sql.row_limit_max, search_kinds=list(p.search.kinds),
                    search_first=p.gate.search_first,
                    sql_dialect=DIALECT_NAMES[self.warehouse.dialect],
                )  # fmt: skip
                specs.append(ToolSpec(name=name, description=description, input_schema=schema))
            self._specs[identity.persona] = specs
        return specs

    def _allowed_tools(self, persona: str) -> frozenset[str]:
        allowed = self._allowed.get(persona)
        if allowed is None:  # the profile is frozen: computed once per persona
            allowed = frozenset(self.profile.tools_for(persona))
            self._allowed[persona] = allowed
        return allowed

    def tool_input_schema(self, tool: str) -> dict[str, Any] | None:
        """The input schema of a tool of this profile, else ``None``."""
        return input_schema(tool) if tool in self.profile.tools else None

    def info(self) -> dict[str, Any]:
        """Version, profile and world identity (no session)."""
        return dict(self._info)

    @property
    def search_engine(self) -> SearchEngine:
        """The search index over the effective knowledge, built on first use (the rankers
        import numpy, which a profile without ``search`` never loads)."""
        if self._search_engine is None:
            from dabench.platform.search.engine import SearchEngine

            search = self.profile.search
            self._search_engine = SearchEngine(
                self.view, list(search.kinds), search.ranking, search.embedding_model
            )
        return self._search_engine

    def _search_features(self) -> dict[str, Any]:
        """``search_ranking`` when search is on, and the embedding model when one ranks."""
        if "search" not in self.profile.tools:
            return {}
        out: dict[str, Any] = {"search_ranking": self.profile.search.ranking}
        model = self.search_engine.embedding_model
        if model is not None:
            out["embedding_model"] = model
        return out

    # ------------------------------------------------------------------ calling

    def call(
        self,
        identity: Identity,
        tool: str,
        arguments: dict[str, Any] | None,
        header_session: str | None = None,
    ) -> ToolOutcome:
        """Run one tool call for ``identity`` and write its audit row before returning."""
        steps = self._call_steps(identity, tool, arguments, header_session)
        reply: _Ran | None = None
        error: Exception | None = None
        while True:
            try:
                work = steps.throw(error) if error is not None else steps.send(reply)
            except StopIteration as done:
                outcome: ToolOutcome = done.value
                return outcome
            try:
                reply, error = self._run_query(work), None
            except Exception as exc:  # thrown into the steps, which audit it
                reply, error = None, exc

    async def acall(
        self,
        identity: Identity,
        tool: str,
        arguments: dict[str, Any] | None,
        header_session: str | None = None,
        limiter: anyio.CapacityLimiter | None = None,
    ) -> ToolOutcome:
        """:meth:`call` from the event loop (asyncio). ``platform_info`` and ``sql_query``
        run on the loop itself: their own work is short (a session row, the audit row, the
        result's JSON), and a query runs on an idle SQL worker awaited through the loop's
        selector (:meth:`.DuckDBWarehouse.guarded_run_async`), so no thread is handed the
        call. Every query waits for its slot on the loop; once it holds it, a query that
        waited too long for a worker, or a low-priority or large one, runs on a thread of
        ``limiter`` (anyio's default pool without one), as does any other tool.

        Cancellation (the client's ``notifications/cancelled``, or its disconnect): a query
        waiting for its slot or worker stops waiting, a running one is stopped (its SQL
        worker killed and replaced, as past its time limit), its slot is freed, and the
        call's audit row says ``CANCELLED``; then the cancellation propagates. Tools run on
        a thread (short, no SQL) are shielded: they finish and write their row first. Either
        way the audit row is written whatever happens."""
        if tool not in _LOOP_TOOLS or sniffio.current_async_library() != "asyncio":
            with anyio.CancelScope(shield=True):
                return await anyio.to_thread.run_sync(
                    self.call, identity, tool, arguments, header_session, limiter=limiter
                )
        steps = self._call_steps(identity, tool, arguments, header_session)
        reply: _Ran | None = None
        error: Exception | None = None
        while True:
            try:
                work = steps.throw(error) if error is not None else steps.send(reply)
            except StopIteration as done:
                outcome: ToolOutcome = done.value
                return outcome
            try:
                reply, error = await self._arun_query(work, limiter), None
            except anyio.get_cancelled_exc_class():
                # stopped and its slot freed (_arun_query): the row records the cancel
                with contextlib.suppress(StopIteration):
                    steps.throw(cancelled_error())
                raise
            except Exception as exc:  # thrown into the steps, which audit it
                reply, error = None, exc

    def _run_query(self, work: _SqlWork) -> _Ran:
        """Run a query the steps of a call asked for: a slot of the fair-sharing scheduler,
        then a worker (waiting for either when none is free); a query that cost its worker
        penalizes its caller."""
        with _refused_wait_recorded(work):
            waited = self.scheduler.acquire(
                work.user, work.session, self.profile.sql.queue_timeout_s
            )
        work.stats["queue_ms"] = waited * 1000.0
        with self._holding_slot(work):
            return self._run_with_slot(work)

    @contextmanager
    def _holding_slot(self, work: _SqlWork) -> Iterator[None]:
        """Around a query that holds its slot: a query that cost its worker penalizes its
        caller (``fair_share``); the slot is given back whatever happens."""
        try:
            yield
        except ToolError as exc:
            self.scheduler.strike(work.culprit, exc.code)
            raise
        finally:
            self.scheduler.release(work.user, work.session)

    def _run_with_slot(self, work: _SqlWork) -> _Ran:
        """The query once its slot is held: a worker or connection (waiting for one when
        none is free: that wait is added to ``queue_ms``; neither counts in the timeout)."""
        sql_cfg = self.profile.sql
        warehouse = self.warehouse
        try:
            args = (work.sql, sql_cfg.max_sql_chars, work.limit, sql_cfg.timeout_s)
            if work.cancel is not None and isinstance(warehouse, DuckDBWarehouse):
                return warehouse.guarded_run(
                    *args,
                    sql_cfg.max_result_bytes,
                    low_priority=work.low_priority,
                    cancel=work.cancel,
                )
            return warehouse.guarded_run(
                *args, sql_cfg.max_result_bytes, low_priority=work.low_priority
            )
        finally:
            wait_ms = self.warehouse.last_wait_s() * 1000.0
            work.stats["queue_ms"] = work.stats.get("queue_ms", 0.0) + wait_ms

    async def _arun_query(self, work: _SqlWork, limiter: anyio.CapacityLimiter | None) -> _Ran:
        """:meth:`_run_query` on the loop: the slot is waited for on the loop for every query
        (a waiting query holds no thread; ``queue_ms`` is written even when the wait ends in
        ``SQL_BUSY``). Then a small normal-priority DuckDB query waits for a worker on the
        loop and runs on it through the loop's selector; a low-priority or large one, one on
        PostgreSQL, and one whose wait for a worker outlasts the point where the pool would
        start another run on a thread of ``limiter``, the slot held (the wait for that
        thread counts in ``queue_ms`` too)."""
        with _refused_wait_recorded(work):
            waited = await self.scheduler.acquire_async(
                work.user, work.session, self.profile.sql.queue_timeout_s
            )
        work.stats["queue_ms"] = waited * 1000.0
        with self._holding_slot(work):
            done = await self._run_on_loop(work)
            if done is None:
                done = await self._run_on_thread(work, limiter)
            return done

    async def _run_on_loop(self, work: _SqlWork) -> _Ran | None:
        """The query on an idle DuckDB worker awaited through the loop, or ``None`` when
        it must run on a thread (low priority, large, PostgreSQL, or no worker in time)."""
        warehouse = self.warehouse
        if not isinstance(warehouse, DuckDBWarehouse) or work.low_priority:
            return None
        sql_cfg = self.profile.sql
        return await warehouse.guarded_run_async(
            work.sql,
            sql_cfg.max_sql_chars,
            work.limit,
            sql_cfg.timeout_s,
            sql_cfg.max_result_bytes,
            stats=work.stats,
        )

    async def _run_on_thread(self, work: _SqlWork, limiter: anyio.CapacityLimiter | None) -> _Ran:
        """:meth:`_run_with_slot` on a thread of ``limiter``; the wait for the thread is
        added to ``queue_ms``. Cancelled, a DuckDB query is stopped (its worker killed) and
        the thread waited for (the slot is held until then); a PostgreSQL query runs on to
        its statement timeout meanwhile."""
        asked = time.perf_counter()
        cancel = work.cancel = QueryCancel()
        finished = threading.Event()

        def run() -> _Ran:
            if not cancel.start():
                raise cancelled_error()  # cancelled before its thread came: nothing ran
            try:
                waited_ms = (time.perf_counter() - asked) * 1000.0
                work.stats["queue_ms"] = work.stats.get("queue_ms", 0.0) + waited_ms
                return self._run_with_slot(work)
            finally:
                finished.set()

        try:
            return await anyio.to_thread.run_sync(run, limiter=limiter, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            if cancel.cancel():  # it runs: stopped now; its slot is freed once it ends
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(finished.wait)
            raise

    def _call_steps(
        self,
        identity: Identity,
        tool: str,
        arguments: dict[str, Any] | None,
        header_session: str | None,
    ) -> Generator[_SqlWork, _Ran | None, ToolOutcome]:
        """One tool call as steps: everything but running its query, which it yields (the
        driver, :meth:`call` or :meth:`acall`, sends back the result or throws its error
        in); returns the outcome once the audit row is written."""
        started = time.perf_counter()
        timestamp = datetime.now(UTC)
        raw = dict(arguments or {})
        try:
            request_chars = len(json.dumps(raw, default=str))
        except (TypeError, ValueError):
            request_chars = 0
        arg_session = raw.pop("session_id", None)
        presented = arg_session if isinstance(arg_session, str) and arg_session else header_session
        if tool == "platform_info":  # it opens a session; a handle it carries is ignored
            arg_session = presented = None
        enrichment = NO_ENRICHMENT
        stats: dict[str, float] = {}
        # Attribution first: the row names a session only when it is the caller's own, so a
        # refused call never counts as a call of the handle's owner.
        unresolved: Exception | None = None
        foreign_episode = False
        try:
            session, foreign_episode = self._session_for(presented, identity)
        except Exception as exc:  # the state store failed: still one row, INTERNAL_ERROR
            session, unresolved = None, exc
        audited_session = session.id if session is not None else None
        touched: PlatformSession | None = session
        try:
            if unresolved is not None:
                raise unresolved
            if request_chars > MAX_REQUEST_CHARS:
                raise ToolError(
                    "INPUT_TOO_LARGE",
                    f"arguments are {request_chars} characters; the limit is {MAX_REQUEST_CHARS}",
                    "send less",
                )
            if tool not in ALL_TOOLS or tool not in self.profile.tools:
                raise ToolError(
                    "UNKNOWN_TOOL",
                    f"tool {tool!r} does not exist on profile {self.profile.name}",
                    "list the tools",
                )
            if tool not in self._allowed_tools(identity.persona):
                raise ToolError(
                    "TOOL_NOT_ALLOWED",
                    f"persona {identity.persona!r} may not call {tool}",
                    "ask a reviewer",
                )
            if arg_session is not None and not isinstance(arg_session, str):
                raw["session_id"] = arg_session  # audited as sent
                raise ToolError(
                    "INVALID_ARGUMENTS",
                    f"{tool}: session_id: expected a string, got {type(arg_session).__name__}",
                    "pass the session_id string from platform_info",
                )
            if tool != "platform_info" and foreign_episode:
                raise ToolError(
                    "SESSION_OF_ANOTHER_EPISODE",
                    "this session belongs to another episode; your key may not use it",
                    "use the session_id your own platform_info returned",
                )
            if tool != "platform_info" and session is None:
                raise ToolError(
                    "SESSION_REQUIRED",
                    "this tool needs a valid session_id"
                    + (" (unknown or not yours)" if presented else ""),
                    "call platform_info and pass its session_id",
                )
            try:
                args = TOOL_ARGS[tool].model_validate(raw)
            except ValidationError as exc:
                raise ToolError(
                    "INVALID_ARGUMENTS",
                    f"{tool}: {_validation_message(exc)}",
                    "check the tool's input schema",
                ) from exc
            if tool == "platform_info":
                session = self.sessions.open(identity.user, identity.persona, episode_of(identity))
                audited_session = session.id
                payload: dict[str, Any] = {
                    **self._info,
                    "session_id": session.id,
                    "user": identity.user,
                    "persona": identity.persona,
                    "tools": [s.name for s in self.tool_specs(identity)],
                    "features": {**self._features, "search_kinds": list(self.profile.search.kinds)},
                }
            elif isinstance(args, SqlQueryArgs):
                assert session is not None
                payload, enrichment = yield from self._sql_query(args, session, stats)
            else:
                assert session is not None
                payload, enrichment = self._dispatch(tool, args, session, identity, stats)
            is_error = False
            error_code = None
        except ToolError as exc:
            payload = exc.payload()
            is_error = True
            error_code = exc.code
        except Exception as exc:  # a bug must still produce a result and an audit row
            logger.exception("tool %s failed", tool)
            err = ToolError("INTERNAL_ERROR", f"{type(exc).__name__}: {exc}"[:300], "retry")
            payload = err.payload()
            is_error = True
            error_code = err.code
        if touched is not None:
            try:
                self.sessions.save(touched)  # gate and enrichment state, before the response
            except Exception:  # the row below must still be written
                logger.exception("saving session %s failed", touched.id)
        text = json.dumps(payload, ensure_ascii=False, default=str)
        self.audit.record(
            timestamp=timestamp,
            duration_ms=(time.perf_counter() - started) * 1000.0,
            session_id=audited_session,
            presented_session_id=presented if audited_session is None else None,
            user_id=identity.user,
            persona=identity.persona,
            episode_id=episode_of(identity),
            tool_name=tool,
            parameters=raw,
            success=not is_error,
            error_code=error_code,
            request_chars=request_chars,
            response_chars=len(text),
            enrichment_applied=enrichment.applied,
            enrichment_tokens_full=enrichment.tokens_full,
            enrichment_tokens_delivered=enrichment.tokens_delivered,
            event_kind="session_start" if tool == "platform_info" else "tool_call",
            queue_ms=stats.get("queue_ms"),
        )
        return ToolOutcome(payload=payload, is_error=is_error, text=text)

    def _dispatch(
        self,
        tool: str,
        args: BaseModel,
        session: PlatformSession,
        identity: Identity,
        stats: dict[str, float],
    ) -> tuple[dict[str, Any], Enrichment]:
        user = identity.user
        if isinstance(args, DescribeTableArgs):
            return self._describe_table(args, session)
        if isinstance(args, ListTablesArgs):
            return self._list_tables(args)
        if isinstance(args, SearchArgs):
            return self._search(args, session), NO_ENRICHMENT
        if isinstance(args, FetchArgs):
            return self._fetch(args, user), NO_ENRICHMENT
        if isinstance(args, MemoryCaptureArgs):
            reviewer = "apply_knowledge" in self._allowed_tools(identity.persona)
            return self.memory.capture(args, user, session.id, reviewer), NO_ENRICHMENT
        if isinstance(args, MemoryManageArgs):
            return self.memory.manage(args, user), NO_ENRICHMENT
        if isinstance(args, ApplyKnowledgeArgs):
            return self.memory.apply_knowledge(args, user), NO_ENRICHMENT
        raise ToolError("UNKNOWN_TOOL", f"tool {tool!r} has no handler")  # pragma: no cover

    # ------------------------------------------------------------------ tools

    def _memories(self, user: str) -> list[Insight] | None:
        if not (self.profile.memory.enabled and self.profile.memory.in_enrichment):
            return None
        return self.state.visible_insights(user)

    def _enrich(self, table_ids: list[str], session: PlatformSession) -> Enrichment:
        if not self.profile.enrichment.enabled:
            return NO_ENRICHMENT
        datasets = [ds for t in table_ids if (ds := self.view.dataset(t)) is not None]
        if not datasets:
            return NO_ENRICHMENT
        return enrich_datasets(
            datasets,
            self.view,
            session,
            self._memories(session.user),
            self.profile.enrichment.dedupe,
        )

    def _sql_query(
        self, args: SqlQueryArgs, session: PlatformSession, stats: dict[str, float]
    ) -> Generator[_SqlWork, _Ran | None, tuple[dict[str, Any], Enrichment]]:
        """``sql_query`` as steps: the checks, the query it yields (see :meth:`_call_steps`),
        then the payload and its enrichment."""
        sql_cfg = self.profile.sql
        if self.profile.gate.search_first and not session.searched:
            raise ToolError(
                "SEARCH_REQUIRED",
                "this platform requires a search before the first sql_query of a session",
                "call search with what you are looking for, then query",
            )
        limit = min(args.limit or sql_cfg.row_limit_default, sql_cfg.row_limit_max)
        culprit = _culprit(session)
        work = _SqlWork(
            user=session.user,
            session=session.id,
            culprit=culprit,
            sql=args.sql,
            limit=limit,
            low_priority=self.scheduler.low_priority(culprit),
            stats=stats,
        )
        done = yield work
        assert done is not None
        tables, result = done
        payload: dict[str, Any] = {
            "columns": result.columns,
            "rows": result.rows,
            "row_count": len(result.rows),
            "truncated": result.truncated,
            "limit": limit,
        }
        if result.truncated_by == "bytes":
            payload["truncated_by"] = "bytes"
            payload["max_bytes"] = sql_cfg.max_result_bytes
        enrichment = self._enrich([t for t in tables if t in self.tables], session)
        if enrichment.applied:
            payload["semantic_context"] = enrichment.blocks
        return payload, enrichment

    def _table_or_error(self, name: str) -> str:
        key = name.strip().strip('"').lower()
        if key in self.tables:
            return key
        close = difflib.get_close_matches(key, list(self.tables), n=3)
        raise ToolError(
            "TABLE_NOT_FOUND",
            f"no table {name!r}",
            f"did you mean {', '.join(close)}?" if close else "list_tables shows every table",
        )

    def _describe_table(
        self, args: DescribeTableArgs, session: PlatformSession
    ) -> tuple[dict[str, Any], Enrichment]:
        table = self._table_or_error(args.table)
        payload: dict[str, Any] = {
            "table": table,
            "columns": [{"name": c, "type": t} for c, t in self.tables[table]],
        }
        enrichment = self._enrich([table], session)
        if enrichment.applied:
            payload["semantic_context"] = enrichment.blocks
        return payload, enrichment

    def _list_tables(self, args: ListTablesArgs) -> tuple[dict[str, Any], Enrichment]:
        names = list(self.tables)
        if args.pattern:
            pat = args.pattern.lower()
            if any(ch in pat for ch in "*?["):
                names = [n for n in names if fnmatch.fnmatchcase(n, pat)]
            else:
                names = [n for n in names if pat in n]
        payload: dict[str, Any] = {
            "tables": [{"name": n, "columns": len(self.tables[n])} for n in names]
        }
        enrichment = NO_ENRICHMENT
        if self.profile.enrichment.enabled:
            datasets = [ds for n in names if (ds := self.view.dataset(n)) is not None]
            enrichment = summarize_datasets(datasets)
            if enrichment.applied:
                payload["semantic_context"] = enrichment.blocks
        return payload, enrichment

    def _search(self, args: SearchArgs, session: PlatformSession) -> dict[str, Any]:
        enabled: list[str] = list(self.profile.search.kinds)
        kinds: list[str] = list(args.kinds) if args.kinds else list(enabled)
        unknown = [k for k in kinds if k not in enabled]
        if unknown:
            raise ToolError(
                "KIND_NOT_AVAILABLE",
                f"search kinds {unknown} are not available on profile {self.profile.name}",
                f"use any of {enabled}",
            )
        memories = self.state.visible_insights(session.user) if "memory" in enabled else []
        results = self.search_engine.search(args.query, kinds, args.limit, session.user, memories)
        session.mark_searched()
        return {"query": args.query, "results": results}

    def _fetch(self, args: FetchArgs, user: str) -> dict[str, Any]:
        prefix, _, ident = args.id.partition(":")
        kind = PREFIX_KIND.get(prefix)
        if kind is None or kind not in self.profile.search.kinds or not ident:
            raise ToolError(
                "NOT_FOUND",
                f"no result {args.id!r}",
                "ids look like "
                + ", ".join(KIND_PREFIX[k] + ":..." for k in self.profile.search.kinds),
            )
        content = self._fetch_content(kind, ident, user)
        if content is None:
            raise ToolError("NOT_FOUND", f"no result {args.id!r}", "search again")
        return {"id": args.id, "kind": kind, "content": content}

    def _fetch_content(self, kind: str, ident: str, user: str) -> dict[str, Any] | None:
        if kind == "dataset":
            ds = self.view.dataset(ident)
            return None if ds is None else dataset_block(ds, self.view, self._memories(user))
        if kind == "column":
            hit = self.view.column(ident)
            if hit is None:
                return None
            ds, col = hit
            return {"dataset": ds.id, **col.model_dump(mode="json")}
        if kind == "glossary":
            term = next((g for g in self.view.catalog.glossary if g.id == ident), None)
            return None if term is None else term.model_dump(mode="json")
        if kind == "knowledge_page":
            page = self.view.page(ident)
            return None if page is None else page.model_dump(mode="json")
        if kind == "curated_query":
            q = next((q for q in self.view.catalog.curated_queries if q.id == ident), None)
            return None if q is None else q.model_dump(mode="json")
        memory = self.state.visible_insight(ident, user)
        return None if memory is None else memory.model_dump(mode="json")

    def record_request(
        self,
        identity: Identity | None,
        *,
        timestamp: datetime,
        duration_ms: float,
        tool_name: str,
        event_kind: EventKind,
        parameters: dict[str, Any],
        presented_session: str | None,
        error_code: str | None,
        request_chars: int,
        response_chars: int,
    ) -> None:
        """Audit a request no tool handled (refused before a tool ran, or not a tool call).

        Attributed like :meth:`call`: the session only when it is the caller's own.
        """
        session = None
        if identity is not None and presented_session:
            session, _ = self._session_for(presented_session, identity)
        self.audit.record(
            timestamp=timestamp,
            duration_ms=duration_ms,
            session_id=session.id if session is not None else None,
            presented_session_id=presented_session if session is None else None,
            user_id=identity.user if identity is not None else UNAUTHENTICATED,
            persona=identity.persona if identity is not None else "",
            episode_id=episode_of(identity),
            tool_name=tool_name,
            parameters=parameters,
            success=error_code is None,
            error_code=error_code,
            request_chars=request_chars,
            response_chars=response_chars,
            event_kind=event_kind,
        )

    # ------------------------------------------------------------------ admin

    def reset_state(self, by: str) -> None:
        """Clear memories, insights, changesets and promoted knowledge (audit rows stay)."""
        self.state.reset()
        self.audit.record(
            timestamp=datetime.now(UTC),
            duration_ms=0.0,
            session_id=None,
            user_id=by,
            persona="admin",
            tool_name="state_reset",
            parameters={},
            success=True,
            error_code=None,
            request_chars=0,
            response_chars=0,
            event_kind="admin",
        )

    def open_episode(self, label: str, users: list[str]) -> tuple[str, dict[str, str]]:
        """Open an episode and mint one key per user (each acts as that configured identity);
        unknown users raise :class:`KeyError` before anything is opened."""
        identities = [self._configured(user) for user in users]
        episode_id = self.episodes.open(label)
        keys = {}
        for identity in identities:
            key = self.episodes.mint(episode_id, identity)
            assert key is not None
            keys[identity.user] = key
        self._admin_row("episode_open", {"label": label, "users": users}, episode_id)
        return episode_id, keys

    def check_episode_batch(self, users: list[list[str]], closing: int) -> None:
        """Before a batch of episodes is opened (``users`` of each) after ``closing``
        others are closed: :class:`KeyError` for an unknown user, :class:`OverflowError`
        when the open episodes would exceed
        :data:`~dabench.platform.admin.episodes.MAX_OPEN_EPISODES`."""
        for names in users:
            for user in names:
                self._configured(user)
        room = MAX_OPEN_EPISODES - max(0, self.episodes.open_count() - closing)
        if len(users) > room:
            raise OverflowError(
                f"{MAX_OPEN_EPISODES} episodes may be open; close (DELETE) finished ones"
            )

    def mint_episode_key(self, episode_id: str, user: str) -> tuple[Identity, str | None]:
        """Another identity's key for an open episode (``None``: no such open episode);
        an unknown user raises :class:`KeyError`."""
        identity = self._configured(user)
        key = self.episodes.mint(episode_id, identity)
        if key is not None:
            self._admin_row("episode_key", {"user": user}, episode_id)
        return identity, key

    def close_episode(self, episode_id: str) -> int | None:
        """Revoke every key of an episode (``None``: no such open episode)."""
        revoked = self.episodes.close(episode_id)
        if revoked is not None:
            self._admin_row("episode_close", {"revoked_keys": revoked}, episode_id)
        return revoked

    def _configured(self, user: str) -> Identity:
        for identity in self.auth.identities:
            if identity.user == user:
                return identity
        raise KeyError(user)

    def _admin_row(self, tool: str, parameters: dict[str, Any], episode_id: str) -> None:
        self.audit.record(
            timestamp=datetime.now(UTC),
            duration_ms=0.0,
            session_id=None,
            user_id="admin",
            persona="admin",
            episode_id=episode_id,
            tool_name=tool,
            parameters=parameters,
            success=True,
            error_code=None,
            request_chars=0,
            response_chars=0,
            event_kind="admin",
        )

    def close(self) -> None:
        """Release the warehouse and stores."""
        self.warehouse.close()
        self.audit.db.close()
        self.state.db.close()


@contextmanager
def _refused_wait_recorded(work: _SqlWork) -> Iterator[None]:
    """Around a wait for a query slot: when it ends in ``SQL_BUSY`` (or is cancelled), the
    time waited is still the call's ``queue_ms``."""
    started = time.perf_counter()
    try:
        yield
    except BaseException:
        work.stats["queue_ms"] = (time.perf_counter() - started) * 1000.0
        raise


def _culprit(session: PlatformSession) -> str:
    """Whom a costly query penalizes (``fair_share``): the episode whose key opened the
    session (other episodes of the same identity are not slowed), else the identity (a
    static key cannot shed its penalty by opening sessions)."""
    if session.episode_id is not None:
        return f"episode:{session.episode_id}"
    return f"user:{session.user}"
