"""The DuckDB backend: read-only query execution on the world's DuckDB warehouse, bounded in
rows, bytes, memory and time whatever function a query calls.

Queries run in a pool of worker processes (:mod:`.process_pool`, :mod:`.worker`), each with
its own read-only connection (external access and extension auto-loading disabled), a share
of ``memory_limit`` (spilling to a bounded temp directory) and an address-space limit, so a
query that builds a huge list or string fails with ``QUERY_MEMORY_LIMIT`` in its worker
while the platform process stays small. The guard runs in the worker too, before the query,
under the same timeout. At the timeout the worker interrupts its query; a function that
does not stop within a grace period has its worker killed and replaced (``QUERY_TIMEOUT``).
Results stream: rows are fetched in small batches until the row cap or the byte cap is
reached, so a query with a huge result costs one batch, not the result, and at most
``max_bytes`` of rows cross to the platform.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dabench.defaults import DEFAULT_SQL_THREADS as DEFAULT_SQL_THREADS
from dabench.defaults import DEFAULT_SQL_WORKERS
from dabench.platform.errors import ToolError
from dabench.platform.sqlguard import SqlScope
from dabench.platform.warehouse.base import QueryCancel, QueryResult, SqlDialect, TableColumns
from dabench.platform.warehouse.process_pool import (
    ASYNC_MAX_REQUEST_BYTES,
    WorkerPool,
    encode_request,
)
from dabench.world.offline import OFFLINE_CONFIG

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


DUCKDB_SHARE = 0.5
"""The part of a worker's memory budget given to DuckDB's buffer manager (``memory_limit``:
hash tables, sorts, spilling beyond it); the rest is for what it does not manage (lists,
strings, the parser) and for Python's copy of a result batch."""

ADDRESS_SPACE_FACTOR = 2
"""A worker's address-space budget over its memory budget: the allocators reserve address
space they never touch, so the hard ``RLIMIT_AS`` sits above the resident budget (which the
worker itself checks while a query runs)."""

MIN_WORKER_SHARE = 64 * 2**20
"""The smallest memory budget a worker may be given."""


@dataclass(frozen=True)
class WarehouseLimits:
    """DuckDB's resource settings for the warehouse (from the profile's ``sql``)."""

    memory_limit: str = "2GiB"
    """What the SQL workers together may add to their start-up size: each gets an equal
    share as its address-space and resident-memory budget, and
    :data:`DUCKDB_SHARE` of that as its DuckDB ``memory_limit``."""
    temp_directory: Path | None = None
    """Where DuckDB spills; ``None`` keeps DuckDB's default (next to the database file)."""
    max_temp_directory_size: str = "4GiB"
    workers: int = DEFAULT_SQL_WORKERS
    """Worker processes at most, i.e. queries that run at once; ``memory_limit`` is split
    among them. They start on demand and stop when idle (one always lives)."""


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


class DuckDBWarehouse:
    """The world's DuckDB warehouse opened read-only by a pool of worker processes (a
    :class:`~.base.Warehouse`)."""

    dialect: SqlDialect = "duckdb"

    def __init__(
        self,
        path: Path,
        threads: int = DEFAULT_SQL_THREADS,
        limits: WarehouseLimits | None = None,
    ) -> None:
        self.path = path
        self.limits = limits or WarehouseLimits()
        if self.limits.temp_directory is not None:
            self.limits.temp_directory.mkdir(parents=True, exist_ok=True)
        if not path.is_file():
            raise FileNotFoundError(f"no DuckDB warehouse at {path}")
        workers = self.limits.workers
        share = _size_bytes(self.limits.memory_limit) // workers
        if share < MIN_WORKER_SHARE:
            raise ValueError(
                f"sql.memory_limit {self.limits.memory_limit} split among {workers} workers "
                f"leaves {share // 2**20} MiB each; each needs at least "
                f"{MIN_WORKER_SHARE // 2**20} MiB (raise memory_limit or lower workers)"
            )
        config = read_only_config(threads, self.limits)
        config["memory_limit"] = f"{int(share * DUCKDB_SHARE) // 2**20}MiB"
        self._pool = WorkerPool(
            {
                "path": str(path),
                "config": config,
                "resident_budget": share,
                "address_space_budget": ADDRESS_SPACE_FACTOR * share,
            },
            workers,
        )
        info = self._pool.info
        self._tables: TableColumns = [
            (str(t), [(str(c), str(d)) for c, d in cols]) for t, cols in info["tables"]
        ]
        self._catalog = str(info["catalog"])
        self.settings: dict[str, str] = dict(info["settings"])
        """DuckDB settings as a worker reports them (``threads``, ``memory_limit`` ...)."""
        self.address_space_limit = int(info["address_space_limit"])
        """Each worker's ``RLIMIT_AS`` in bytes."""

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the SQL workers (for measuring their memory)."""
        return self._pool.pids

    @property
    def workers_replaced(self) -> int:
        """Workers killed (past their time) or dead (out of memory) and replaced."""
        return self._pool.replaced

    @property
    def slots(self) -> int:
        """Queries that can run at once (the number of workers)."""
        return self.limits.workers

    def last_wait_s(self) -> float:
        """Seconds this thread's last query waited for a worker (before its timeout ran)."""
        return self._pool.last_wait_s()

    def tables(self) -> TableColumns:
        """Every ``schema.table`` with its ``(column, type)`` list, sorted."""
        return [(t, list(cols)) for t, cols in self._tables]

    def scope(self) -> SqlScope:
        """What the SQL guard lets a query reference: this warehouse's tables."""
        return SqlScope(
            catalog=self._catalog, tables=frozenset(t for t, _ in self._tables), dialect="duckdb"
        )

    def run(
        self, sql: str, limit: int, timeout_s: float, max_bytes: int = 1024 * 1024
    ) -> QueryResult:
        """Run one guard-checked SELECT in a worker; ``QUERY_TIMEOUT``,
        ``QUERY_MEMORY_LIMIT`` or ``SQL_ERROR`` on failure.

        At most ``limit`` rows and ``max_bytes`` of row JSON are returned."""
        return self._request(sql, None, limit, timeout_s, max_bytes)[1]

    def guarded_run(
        self,
        sql: str,
        max_sql_chars: int,
        limit: int,
        timeout_s: float,
        max_bytes: int,
        low_priority: bool = False,
        cancel: QueryCancel | None = None,
    ) -> tuple[tuple[str, ...], QueryResult]:
        """Guard-check and run ``sql`` in a worker (the guard's parsing costs the worker's
        time and memory, under the same timeout); returns the referenced tables and rows.
        With ``low_priority`` the worker runs it at low CPU priority from its start.
        ``cancel`` stops it from another thread (``CANCELLED``: the worker is replaced)."""
        return self._request(sql, max_sql_chars, limit, timeout_s, max_bytes, low_priority, cancel)

    def _request(
        self,
        sql: str,
        max_sql_chars: int | None,
        limit: int,
        timeout_s: float,
        max_bytes: int,
        low_priority: bool = False,
        cancel: QueryCancel | None = None,
    ) -> tuple[tuple[str, ...], QueryResult]:
        req: dict[str, Any] = {
            "sql": sql,
            "max_sql_chars": max_sql_chars,
            "limit": limit,
            "timeout_s": timeout_s,
            "max_bytes": max_bytes,
        }
        if low_priority:
            req["low_priority"] = True
        return _unpack(self._pool.request(req, timeout_s, cancel))

    async def guarded_run_async(
        self,
        sql: str,
        max_sql_chars: int,
        limit: int,
        timeout_s: float,
        max_bytes: int,
        stats: dict[str, float] | None = None,
    ) -> tuple[tuple[str, ...], QueryResult] | None:
        """:meth:`guarded_run` on the running asyncio loop when the query is small and a
        worker comes free while it waits on the loop (:meth:`.WorkerPool.take_async`,
        :meth:`.WorkerPool.request_async`), else ``None`` (nothing was run: use
        :meth:`guarded_run` on a thread). Not for low-priority queries (their workers are
        chosen by the pool's rules for them). ``stats["queue_ms"]``: the wait for a worker."""
        line = encode_request(
            {
                "sql": sql,
                "max_sql_chars": max_sql_chars,
                "limit": limit,
                "timeout_s": timeout_s,
                "max_bytes": max_bytes,
            }
        )
        if len(line) > ASYNC_MAX_REQUEST_BYTES:
            return None
        worker = self._pool.try_take()
        if worker is None:  # a wait (0 ms when a worker was free at once)
            started = time.perf_counter()
            worker = await self._pool.take_async()
            if stats is not None:
                waited_ms = (time.perf_counter() - started) * 1000.0
                stats["queue_ms"] = stats.get("queue_ms", 0.0) + waited_ms
        if worker is None:
            return None
        return _unpack(await self._pool.request_async(worker, line, timeout_s))

    def close(self) -> None:
        """Stop the workers."""
        self._pool.close()


def _unpack(answer: dict[str, Any]) -> tuple[tuple[str, ...], QueryResult]:
    """A worker's answer as the referenced tables and the result (its error raised)."""
    if "error" in answer:
        err = answer["error"]
        raise ToolError(str(err["code"]), str(err["message"]), str(err.get("hint", "")))
    ok = answer["ok"]
    truncated_by = ok["truncated_by"]
    result = QueryResult(
        columns=ok["columns"],
        rows=ok["rows"],
        truncated=truncated_by is not None,
        truncated_by=truncated_by,
    )
    return tuple(ok["tables"]), result


_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_UNITS.update({"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40})


def _size_bytes(size: str) -> int:
    """``2GiB``, ``512MB``, ``1.5 GB`` -> bytes (the profile's size pattern)."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B|B)\s*", size, re.IGNORECASE)
    if match is None:
        raise ValueError(f"not a size: {size!r} (e.g. 512MB, 2GiB)")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])
