"""Read-only query execution on the world's DuckDB warehouse, bounded in rows and time.

One read-only connection with external access and extension auto-loading disabled; each
call gets its own ``cursor()`` and runs in the caller's worker thread. A timer interrupts
the cursor when the statement timeout expires.
"""

from __future__ import annotations

import datetime as dt
import decimal
import heapq
import itertools
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from dabench.platform.errors import ToolError
from dabench.platform.sqlguard import SqlScope
from dabench.world import OFFLINE_CONFIG

READ_ONLY_CONFIG: dict[str, Any] = {**OFFLINE_CONFIG, "lock_configuration": True}
"""The world's offline settings, and no ``SET`` can change them afterwards."""

DEFAULT_SQL_THREADS = 1
"""DuckDB threads per query. One: a tool call's query runs on its own worker thread, so
concurrent sessions already run in parallel, and for the small queries agents send, waking
DuckDB's pool costs more than it saves (``benchmarks/platform_roundtrip.py``)."""


def read_only_config(threads: int = DEFAULT_SQL_THREADS) -> dict[str, Any]:
    """:data:`READ_ONLY_CONFIG` with DuckDB's thread count (every connection to one file in a
    process must use the same configuration)."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    return {**READ_ONLY_CONFIG, "threads": threads}


@dataclass(frozen=True)
class QueryResult:
    """Rows of a query, capped at ``limit`` with ``truncated`` set when more existed."""

    columns: list[dict[str, str]]
    rows: list[list[Any]]
    truncated: bool


def jsonable(value: Any) -> Any:
    """Convert a DuckDB value to something ``json.dumps`` accepts, deterministically."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return str(value)


class Watchdog:
    """One daemon thread that interrupts cursors whose statement timeout expired.

    Cheaper than a timer thread per query: arming and disarming are a heap push and a
    dictionary delete under a condition variable.
    """

    GRANULARITY_S = 0.05
    """The watchdog's resolution: a timeout fires up to this much late."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._armed: dict[int, duckdb.DuckDBPyConnection] = {}
        self._seq = itertools.count()
        self._thread = threading.Thread(target=self._loop, name="sql-watchdog", daemon=True)
        self._thread.start()

    def arm(self, cursor: duckdb.DuckDBPyConnection, timeout_s: float) -> int:
        """Interrupt ``cursor`` after ``timeout_s`` unless disarmed; returns a ticket."""
        ticket = next(self._seq)
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._armed[ticket] = cursor
            # Wake the thread only when its next deadline moves earlier: with one timeout for
            # every query a new deadline is never the earliest, so most calls switch no thread.
            wake = not self._heap or deadline < self._heap[0][0]
            heapq.heappush(self._heap, (deadline, ticket))
            if wake:
                self._cond.notify()
        return ticket

    def disarm(self, ticket: int) -> None:
        """Cancel a pending interrupt."""
        with self._cond:
            self._armed.pop(ticket, None)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                deadline, ticket = self._heap[0]
                now = time.monotonic()
                if deadline > now:
                    # Disarmed tickets stay in the heap until their deadline; waking at most
                    # every GRANULARITY_S pops them in batches instead of one wake-up per query.
                    self._cond.wait(max(deadline - now, self.GRANULARITY_S))
                    continue
                heapq.heappop(self._heap)
                cursor = self._armed.pop(ticket, None)
            if cursor is not None:
                cursor.interrupt()


class Warehouse:
    """The world's warehouse opened read-only."""

    def __init__(self, path: Path, threads: int = DEFAULT_SQL_THREADS) -> None:
        self.path = path
        self._con = duckdb.connect(str(path), read_only=True, config=read_only_config(threads))
        self._watchdog = Watchdog()

    def tables(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """Every ``schema.table`` with its ``(column, type)`` list, sorted."""
        cur = self._con.cursor()
        try:
            rows = cur.execute(
                "SELECT table_schema, table_name, column_name, data_type "
                "FROM information_schema.columns "
                "WHERE table_catalog = current_database() "
                "AND table_schema NOT IN ('information_schema', 'pg_catalog') "
                "ORDER BY table_schema, table_name, ordinal_position"
            ).fetchall()
        finally:
            cur.close()
        out: dict[str, list[tuple[str, str]]] = {}
        for schema, table, column, dtype in rows:
            out.setdefault(f"{schema}.{table}".lower(), []).append((column, dtype))
        return sorted(out.items())

    def scope(self) -> SqlScope:
        """What the SQL guard lets a query reference: this warehouse's tables."""
        cur = self._con.cursor()
        try:
            row = cur.execute("SELECT current_database()").fetchone()
        finally:
            cur.close()
        catalog = str(row[0]) if row else ""
        return SqlScope(catalog=catalog, tables=frozenset(t for t, _ in self.tables()))

    def run(self, sql: str, limit: int, timeout_s: float) -> QueryResult:
        """Run one checked SELECT; raise ``QUERY_TIMEOUT`` or ``SQL_ERROR`` on failure."""
        cur = self._con.cursor()
        ticket = self._watchdog.arm(cur, timeout_s)
        try:
            cur.execute(sql)
            description = cur.description or []
            fetched = cur.fetchmany(limit + 1)
        except duckdb.InterruptException as exc:
            raise ToolError(
                "QUERY_TIMEOUT",
                f"the query ran longer than the {timeout_s:g} s statement timeout",
                "aggregate earlier, filter more, or use a pre-aggregated table",
            ) from exc
        except duckdb.Error as exc:
            first = str(exc).splitlines()[0][:500]
            raise ToolError(
                "SQL_ERROR", first, "check table and column names with describe_table"
            ) from exc
        finally:
            self._watchdog.disarm(ticket)
            cur.close()
        columns = [{"name": str(d[0]), "type": str(d[1])} for d in description]
        truncated = len(fetched) > limit
        rows = [[jsonable(v) for v in row] for row in fetched[:limit]]
        return QueryResult(columns=columns, rows=rows, truncated=truncated)

    def close(self) -> None:
        """Close the connection."""
        self._con.close()
