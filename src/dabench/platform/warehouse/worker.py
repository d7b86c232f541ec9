"""A SQL worker process: the guard and one DuckDB query at a time, under OS limits (or,
for PostgreSQL, the guard alone: its parsing costs the worker's CPU and memory, not the
platform's, and is bounded by a timeout).

Started by :class:`~dabench.platform.warehouse.process_pool.WorkerPool` as
``python -m dabench.platform.warehouse.worker``. It speaks one JSON object per line: the
first line it reads is its configuration (the world file, DuckDB's settings, the address-space
and resident-memory budgets), answered by the warehouse's tables; every later line is a
query, answered by its result or a structured error. JSON, not pickle, in both directions:
the parent never runs code a compromised worker could send.

Limits that hold whatever function a query calls:

- ``RLIMIT_AS`` caps the process's address space at its size after start-up plus its budget,
  so a list, string or hash table that DuckDB's ``memory_limit`` does not cover fails to
  allocate (``QUERY_MEMORY_LIMIT``) instead of growing the machine's memory;
- its resident memory is checked every :data:`RESIDENT_CHECK_S` while a query runs; past its
  size after start-up plus its resident budget (memory the allocator kept mapped is reused without
  growing the address space) the worker answers ``QUERY_MEMORY_LIMIT`` and exits;
- a worker whose address space or resident memory grew past half its budget after a query
  (DuckDB and malloc keep what they mapped) asks to be replaced;
- a query (or, in a guard process, a check) running longer than half a second drops to
  nice 10, so the short queries of other sessions get the CPU first (its priority is
  restored afterwards, or the worker replaced where that is not permitted); a query sent
  with ``low_priority`` (its caller is penalized, see ``platform.fair_share``) runs at
  nice 10 from its start, the guard's parsing included, and its answer says so (``nice``,
  ``group_nice``); the worker's autogroup (its session's scheduling group) gets the same
  nice value meanwhile, since under autogroup scheduling a thread's own counts only within
  its process (:class:`QueryPriority`);
- a watchdog thread interrupts the query at its timeout (``QUERY_TIMEOUT``); a function that
  ignores the interrupt is killed by the parent after a grace period.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from typing import IO, Any

import duckdb

from dabench.platform.errors import ToolError
from dabench.platform.sqlguard import SqlScope, check_sql
from dabench.platform.warehouse.base import fetch_capped, memory_error, sql_error, timeout_error
from dabench.platform.warehouse.priority import (
    LONG_QUERY_NICE,
    LONG_QUERY_S,
    group_nice,
    renice,
    set_group_nice,
)
from dabench.platform.warehouse.watchdog import Watchdog

SETTINGS_REPORTED = (
    "threads",
    "memory_limit",
    "temp_directory",
    "max_temp_directory_size",
    "python_enable_replacements",
    "enable_external_access",
)
"""DuckDB settings the worker reports at start-up (so callers can check what applies)."""


GUARD_RECURSION_LIMIT = 30_000
"""Python's recursion limit in a worker (the parsers recurse once per nested expression)."""


RESIDENT_CHECK_S = 0.05
"""How often a running query's worker compares its resident memory with its budget."""


BASE_NICE = [0]
"""The nice value queries run at: 0, or the start-up value when the worker may not return
to 0 (then every query runs there and a long one is not demoted further)."""


def _restore_priority() -> None:
    """After start-up: every thread and the worker's autogroup back to nice 0 (see
    ``process_pool.STARTUP_NICE``)."""
    for tid in os.listdir("/proc/self/task"):
        if not renice(int(tid), 0):
            BASE_NICE[0] = os.getpriority(os.PRIO_PROCESS, 0)
            return
    if not set_group_nice(0):
        BASE_NICE[0] = group_nice() or 0


def _lower_priority(tid: int) -> dict[str, int | None]:
    """Drop thread ``tid`` and the worker's autogroup to :data:`LONG_QUERY_NICE` (or stay
    at the base value, when that is lower still); returns their nice values now."""
    nice = max(LONG_QUERY_NICE, BASE_NICE[0])
    renice(tid, nice)
    set_group_nice(nice)
    return {"nice": os.getpriority(os.PRIO_PROCESS, tid), "group_nice": group_nice()}


def _normal_priority(tid: int) -> bool:
    """Thread ``tid`` and the worker's autogroup back to the base nice value; ``False``
    when not permitted (then the worker is replaced)."""
    return renice(tid, BASE_NICE[0]) and set_group_nice(BASE_NICE[0])


class QueryPriority:
    """A worker's CPU priority over one query: nice 10 (thread and autogroup) from the
    query's start when it is sent ``low_priority``, else once it has run
    :data:`LONG_QUERY_S`; back to the base value after it."""

    def __init__(self, watchdog: Watchdog) -> None:
        self._watchdog = watchdog
        self._lock = threading.Lock()
        self._tid: int | None = None
        """The thread running a query (``None`` between queries): a demotion that fires as
        the query ends must not lower the priority after it was restored."""
        self._demote: int | None = None

    def start(self, low_priority: bool) -> dict[str, int | None] | None:
        """A query starts on this thread; the nice values it runs at when
        ``low_priority`` (reported in its answer), else ``None``."""
        tid = threading.get_native_id()
        self._tid = tid
        if low_priority:
            self._demote = None
            return _lower_priority(tid)
        self._demote = self._watchdog.arm(lambda: self._lower(tid), LONG_QUERY_S)
        return None

    def end(self) -> bool:
        """The query ended: its priority restored; ``False`` when that is not permitted
        (then the worker must be replaced)."""
        with self._lock:  # after a demotion under way, never before it
            tid, self._tid = self._tid, None
            lowered = self._demote is None or not self._watchdog.disarm(self._demote)
            return tid is None or not lowered or _normal_priority(tid)

    def _lower(self, tid: int) -> None:
        """On the watchdog's thread: the query of thread ``tid``, if it still runs, drops to
        :data:`LONG_QUERY_NICE`."""
        with self._lock:
            if self._tid == tid:
                _lower_priority(tid)


_PAGE = os.sysconf("SC_PAGE_SIZE")
_STATM: dict[int, int] = {}
"""Process id -> an open ``/proc/self/statm`` (read again with ``pread``: no open per query)."""


def _memory_bytes() -> tuple[int, int]:
    """This process's address-space size and resident memory in bytes."""
    fd = _STATM.get(os.getpid())
    if fd is None:
        fd = _STATM[os.getpid()] = os.open("/proc/self/statm", os.O_RDONLY)
    size, resident = os.pread(fd, 256, 0).split()[:2]
    return int(size) * _PAGE, int(resident) * _PAGE


class GuardWorker:
    """The guard alone, for a warehouse that runs its queries elsewhere (PostgreSQL)."""

    must_recycle = False
    """Set when the worker could not restore its priority after a low-priority check."""

    def __init__(self, scope: dict[str, Any]) -> None:
        self.tables: list[tuple[str, list[list[str]]]] = []
        self.catalog = str(scope["catalog"])
        self.settings: dict[str, str] = {}
        self.scope = SqlScope(
            catalog=self.catalog, tables=frozenset(scope["tables"]), dialect=scope["dialect"]
        )
        self.priority = QueryPriority(Watchdog("guard-watchdog"))
        check_sql("SELECT 1", 100, self.scope)  # load the guard's parsers before the limit

    def query(self, req: dict[str, Any]) -> dict[str, Any]:
        """Guard-check one statement; the checked SQL and its tables, or the refusal. A
        check running :data:`LONG_QUERY_S` drops to low priority, as a query does."""
        nice = self.priority.start(bool(req.get("low_priority")))
        try:
            checked = check_sql(str(req["sql"]), int(req["max_sql_chars"]), self.scope)
        except ToolError as exc:
            return {"error": exc.error()}
        finally:
            if not self.priority.end():
                self.must_recycle = True
        answer: dict[str, Any] = {"ok": {"sql": checked.sql, "tables": list(checked.tables)}}
        if nice is not None:
            answer.update(nice)
        return answer


class Worker:
    """One read-only connection to the world and the guard's scope over it."""

    must_recycle = False
    """Set when the worker could not restore its priority after a long query."""

    resident_limit = 0
    """Resident bytes past which a running query's worker answers ``QUERY_MEMORY_LIMIT``
    and exits (0: unchecked); set by :func:`main` once the worker has started."""

    def __init__(self, path: str, config: dict[str, Any], out: IO[bytes]) -> None:
        self.con = duckdb.connect(path, read_only=True, config=config)
        self.watchdog = Watchdog()
        self._out = out
        self._out_lock = threading.Lock()
        self._running = False
        self._check = -1
        self._cursor: duckdb.DuckDBPyConnection | None = None
        """The last query's cursor, kept for the next one when that query read its whole
        (small) result and was not interrupted: a new cursor costs a client context."""
        self.priority = QueryPriority(self.watchdog)
        cur = self.con.cursor()
        try:
            rows = cur.execute(
                "SELECT table_schema, table_name, column_name, data_type "
                "FROM information_schema.columns "
                "WHERE table_catalog = current_database() "
                "AND table_schema NOT IN ('information_schema', 'pg_catalog') "
                "ORDER BY table_schema, table_name, ordinal_position"
            ).fetchall()
            catalog = cur.execute("SELECT current_database()").fetchone()
            names = ", ".join(f"'{n}'" for n in SETTINGS_REPORTED)
            settings = cur.execute(
                f"SELECT name, value FROM duckdb_settings() WHERE name IN ({names})"
            ).fetchall()
        finally:
            cur.close()
        tables: dict[str, list[list[str]]] = {}
        for schema, table, column, dtype in rows:
            tables.setdefault(f"{schema}.{table}".lower(), []).append([column, dtype])
        self.tables = sorted(tables.items())
        self.catalog = str(catalog[0]) if catalog else ""
        self.settings = {str(k): str(v) for k, v in settings}
        self.scope = SqlScope(catalog=self.catalog, tables=frozenset(tables), dialect="duckdb")
        check_sql("SELECT 1", 100, self.scope)  # load the guard's parsers before the limit

    def query(self, req: dict[str, Any]) -> dict[str, Any]:
        """Guard-check (when ``max_sql_chars`` is given) and run one query; the answer."""
        timeout_s = float(req["timeout_s"])
        cur, self._cursor = self._cursor or self.con.cursor(), None
        ticket = self.watchdog.arm(cur.interrupt, timeout_s)
        nice = self.priority.start(bool(req.get("low_priority")))
        if self.resident_limit:
            with self._out_lock:
                self._running = True
                self._check = self.watchdog.arm(self._check_resident, RESIDENT_CHECK_S)
        reuse = False  # the cursor, once the query has read its whole result
        try:
            sql = str(req["sql"])
            tables: list[str] = []
            if req.get("max_sql_chars") is not None:
                checked = check_sql(sql, int(req["max_sql_chars"]), self.scope)
                sql, tables = checked.sql, list(checked.tables)
            cur.execute(sql)
            description = cur.description or []
            rows, truncated_by = fetch_capped(
                cur.fetchmany, int(req["limit"]), int(req["max_bytes"])
            )
            reuse = truncated_by is None
        except ToolError as exc:
            return {"error": exc.error()}
        except duckdb.InterruptException:
            return {"error": timeout_error(timeout_s).error()}
        except duckdb.OutOfMemoryException as exc:
            return {"error": memory_error(str(exc)).error()}
        except MemoryError:
            return {"error": memory_error("").error()}
        except duckdb.Error as exc:
            return {"error": sql_error(str(exc)).error()}
        finally:
            with self._out_lock:
                self._running = False  # the resident check stops; it can no longer answer
                self.watchdog.disarm(self._check)
            if not self.watchdog.disarm(ticket):
                reuse = False  # its interrupt may still reach it
            if not self.priority.end():
                self.must_recycle = True  # may not raise its priority again: replaced
            if reuse:
                self._cursor = cur
            else:
                cur.close()
        columns = [{"name": str(d[0]), "type": str(d[1])} for d in description]
        answer: dict[str, Any] = {
            "ok": {"tables": tables, "columns": columns, "rows": rows, "truncated_by": truncated_by}
        }
        if nice is not None:
            answer.update(nice)
        return answer

    def _check_resident(self) -> None:
        """On the watchdog's thread while a query runs: past the resident limit, answer
        ``QUERY_MEMORY_LIMIT`` in the query's place and exit (the parent replaces the
        worker); else check again in :data:`RESIDENT_CHECK_S`."""
        with self._out_lock:
            if not self._running:
                return
            rss = _memory_bytes()[1]
            if rss > self.resident_limit:
                error = memory_error(
                    f"Out of Memory: the worker's resident memory reached {rss // 2**20} MiB, "
                    f"past its limit of {self.resident_limit // 2**20} MiB"
                )
                try:
                    _send(self._out, {"error": error.error(), "recycle": True})
                finally:
                    os._exit(3)
            self._check = self.watchdog.arm(self._check_resident, RESIDENT_CHECK_S)


def _send(out: IO[bytes], obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj).encode("ascii") + b"\n")
    out.flush()


def main() -> None:
    """Serve queries on stdin/stdout until stdin closes."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints go to stderr, never into the protocol
    line = sys.stdin.buffer.readline()
    if not line:
        return
    hello = json.loads(line)
    # long flat expressions (a 4,750-term sum, a 1,000-way UNION ALL) parse recursively; the
    # worker's time and memory limits bound what a deeper recursion costs
    sys.setrecursionlimit(GUARD_RECURSION_LIMIT)
    worker: Worker | GuardWorker
    if hello.get("path") is None:
        worker = GuardWorker(hello["scope"])
    else:
        worker = Worker(hello["path"], hello["config"], out)
    budget = int(hello["address_space_budget"])
    resident = int(hello.get("resident_budget") or 0)
    base, base_rss = _memory_bytes()
    limit = base + budget if budget > 0 else resource.RLIM_INFINITY
    recycle_above = base + budget // 2 if budget > 0 else sys.maxsize
    recycle_rss_above = base_rss + resident // 2 if resident > 0 else sys.maxsize
    if resident > 0 and isinstance(worker, Worker):
        worker.resident_limit = base_rss + resident
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _restore_priority()
    _send(
        out,
        {
            "ok": {
                "pid": os.getpid(),
                "tables": worker.tables,
                "catalog": worker.catalog,
                "settings": worker.settings,
                "address_space_limit": limit,
            }
        },
    )
    for line in sys.stdin.buffer:
        started = time.perf_counter()
        try:
            answer = worker.query(json.loads(line))
        except MemoryError:
            answer = {"error": memory_error("").error()}
        answer["worker_ms"] = (time.perf_counter() - started) * 1000.0
        # DuckDB and malloc keep address space after a big query (or a failed allocation):
        # a worker past half its budget is replaced, so the next query gets its full budget
        size, rss = _memory_bytes()
        grown = size > recycle_above or rss > recycle_rss_above
        if getattr(worker, "must_recycle", False) or grown:
            answer["recycle"] = True
        try:
            _send(out, answer)
        except MemoryError:
            _send(out, {"error": memory_error("").error(), "recycle": True})


if __name__ == "__main__":
    main()
