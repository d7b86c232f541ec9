"""The DuckDB backend: read-only query execution on the world's DuckDB warehouse, bounded in
rows, bytes, memory and time.

One read-only connection with external access and extension auto-loading disabled and a
``memory_limit`` (spilling to a bounded temp directory); each call gets its own
``cursor()`` and runs in the caller's worker thread. Results stream: rows are fetched in
small batches until the row cap or the byte cap is reached, so a query with a huge result
costs one batch, not the result. A watchdog interrupts the cursor when the statement
timeout expires.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from dabench.defaults import DEFAULT_SQL_THREADS as DEFAULT_SQL_THREADS
from dabench.platform.sqlguard import SqlScope
from dabench.platform.warehouse.base import (
    QueryResult,
    SqlDialect,
    TableColumns,
    fetch_capped,
    sql_error,
    timeout_error,
)
from dabench.world import OFFLINE_CONFIG

READ_ONLY_CONFIG: dict[str, Any] = {
    **OFFLINE_CONFIG,
    "python_enable_replacements": False,
    "allocator_flush_threshold": "32MiB",
    "allocator_bulk_deallocation_flush_threshold": "64MiB",
    "allocator_background_threads": True,
    "lock_configuration": True,
}
"""The world's offline settings, no Python-variable replacement scans, memory handed back
to the OS within seconds of a large query (``allocator_*``: without the background threads
a 1 GB-result query left ~0.9 GB resident), and no ``SET`` can change them
afterwards."""


@dataclass(frozen=True)
class WarehouseLimits:
    """DuckDB's resource settings for the warehouse connection (from the profile's ``sql``)."""

    memory_limit: str = "2GiB"
    temp_directory: Path | None = None
    """Where DuckDB spills; ``None`` keeps DuckDB's default (next to the database file)."""
    max_temp_directory_size: str = "4GiB"


def read_only_config(
    threads: int = DEFAULT_SQL_THREADS, limits: WarehouseLimits | None = None
) -> dict[str, Any]:
    """:data:`READ_ONLY_CONFIG` with DuckDB's thread count and resource limits (every
    connection to one file in a process must use the same configuration)."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    lim = limits or WarehouseLimits()
    config: dict[str, Any] = {
        **READ_ONLY_CONFIG,
        "threads": threads,
        "memory_limit": lim.memory_limit,
        "max_temp_directory_size": lim.max_temp_directory_size,
    }
    if lim.temp_directory is not None:
        config["temp_directory"] = str(lim.temp_directory)
    return config


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


class DuckDBWarehouse:
    """The world's DuckDB warehouse opened read-only (a :class:`~.base.Warehouse`)."""

    dialect: SqlDialect = "duckdb"

    def __init__(
        self,
        path: Path,
        threads: int = DEFAULT_SQL_THREADS,
        limits: WarehouseLimits | None = None,
    ) -> None:
        self.path = path
        if limits is not None and limits.temp_directory is not None:
            limits.temp_directory.mkdir(parents=True, exist_ok=True)
        self._con = duckdb.connect(
            str(path), read_only=True, config=read_only_config(threads, limits)
        )
        self._watchdog = Watchdog()

    def tables(self) -> TableColumns:
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
        return SqlScope(
            catalog=catalog, tables=frozenset(t for t, _ in self.tables()), dialect="duckdb"
        )

    def run(
        self, sql: str, limit: int, timeout_s: float, max_bytes: int = 1024 * 1024
    ) -> QueryResult:
        """Run one checked SELECT; raise ``QUERY_TIMEOUT`` or ``SQL_ERROR`` on failure.

        At most ``limit`` rows and ``max_bytes`` of row JSON are returned."""
        cur = self._con.cursor()
        ticket = self._watchdog.arm(cur, timeout_s)
        try:
            bounded, flagged = _bounded_values(cur, sql, max_bytes)
            cur.execute(bounded)
            description = (cur.description or [])[: -1 if flagged else None]
            rows, truncated_by = fetch_capped(cur.fetchmany, limit, max_bytes, flagged)
        except duckdb.InterruptException as exc:
            raise timeout_error(timeout_s) from exc
        except duckdb.Error as exc:
            raise sql_error(str(exc)) from exc
        finally:
            self._watchdog.disarm(ticket)
            cur.close()
        columns = [{"name": str(d[0]), "type": str(d[1])} for d in description]
        return QueryResult(
            columns=columns,
            rows=rows,
            truncated=truncated_by is not None,
            truncated_by=truncated_by,
        )

    def close(self) -> None:
        """Close the connection."""
        self._con.close()


_SIZE_FUNCTIONS = {"VARCHAR": "strlen({})", "JSON": "strlen({})", "BLOB": "octet_length({})"}
_NESTED_PREFIXES = ("STRUCT", "MAP", "UNION", "VARIANT")


def _size_expression(type_name: str, column: str) -> str | None:
    """SQL for a value's size in bytes when its type can be large, else ``None``."""
    template = _SIZE_FUNCTIONS.get(type_name)
    if template is None and (type_name.endswith("]") or type_name.startswith(_NESTED_PREFIXES)):
        template = "strlen(CAST({} AS VARCHAR))"  # lists, arrays, structs, maps
    return template.format(column) if template else None


def _bounded_values(cur: duckdb.DuckDBPyConnection, sql: str, max_bytes: int) -> tuple[str, bool]:
    """Wrap ``sql`` so no value larger than ``max_bytes`` reaches Python.

    The query is bound (not run) to learn its column types; when it has string, blob or
    nested (list, struct, map) columns, the wrapper replaces an oversized value by NULL and
    adds a last boolean column saying so (the fetch stops at that row). A value over the
    byte cap could never be returned, and converting one (``repeat('x', 1e9)``, a list of
    millions of strings) would hold the process for seconds and gigabytes. Columns keep
    their names, types and order. Returns the SQL to run and whether the flag was added.

    ``sql`` must be guard-checked: the guard refuses unterminated comments, strings and
    quoted names and more than one statement, so the text cannot reach past the wrapper's
    parentheses (and a trailing ``--`` comment ends at the newline before them).
    """
    rel = cur.sql(sql)
    sized = {
        i: size
        for i, t in enumerate(rel.types, 1)
        if (size := _size_expression(str(t), f"#{i}")) is not None
    }
    if not sized:
        return sql, False
    cols = []
    for i, name in enumerate(rel.columns, 1):
        alias = '"' + str(name).replace('"', '""') + '"'
        size = sized.get(i)
        value = f"CASE WHEN {size} > {max_bytes} THEN NULL ELSE #{i} END" if size else f"#{i}"
        cols.append(f"{value} AS {alias}")
    flag = " OR ".join(f"coalesce({size} > {max_bytes}, false)" for size in sized.values())
    wrapped = f"SELECT {', '.join(cols)}, ({flag}) AS oversize FROM (\n{sql}\n) AS q"
    return wrapped, True
