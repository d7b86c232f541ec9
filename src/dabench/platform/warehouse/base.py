"""The one interface every warehouse backend implements, and what backends share.

The platform's SQL tools (``sql_query``, ``describe_table``, ``list_tables``) reach the data
only through :class:`Warehouse`: list the tables with their columns, the guard's scope, run
one guard-checked read-only query under row, byte and time bounds, close.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from dabench.platform.errors import ToolError
from dabench.platform.sqlguard import SqlScope

SqlDialect = Literal["duckdb", "postgres"]
"""The SQL dialect a backend runs (and the guard parses)."""

DIALECT_NAMES: dict[SqlDialect, str] = {"duckdb": "DuckDB", "postgres": "PostgreSQL"}
"""How each dialect is named to agents (the ``sql_query`` description, ``platform_info``)."""

FETCH_BATCH_ROWS = 16
"""Rows converted per fetch: bounds the Python work (and GIL time) between cap checks."""


@dataclass(frozen=True)
class QueryResult:
    """Rows of a query, capped at ``limit`` rows and ``max_bytes`` of JSON; ``truncated``
    is set when more existed."""

    columns: list[dict[str, str]]
    rows: list[list[Any]]
    truncated: bool
    truncated_by: str | None = None
    """``rows`` or ``bytes``: which cap cut the result."""


TableColumns = list[tuple[str, list[tuple[str, str]]]]
"""Every ``schema.table`` (lower case) with its ``(column, type)`` list, sorted."""


class Warehouse(Protocol):
    """A read-only warehouse the platform serves SQL from."""

    dialect: SqlDialect

    def tables(self) -> TableColumns:
        """Every world table with its columns, sorted by name."""
        ...

    def scope(self) -> SqlScope:
        """What the SQL guard lets a query reference (this warehouse's tables, its dialect)."""
        ...

    def run(
        self, sql: str, limit: int, timeout_s: float, max_bytes: int = 1024 * 1024
    ) -> QueryResult:
        """Run one guard-checked SELECT: at most ``limit`` rows and ``max_bytes`` of row
        JSON; ``QUERY_TIMEOUT`` past ``timeout_s``, ``SQL_ERROR`` on an engine error."""
        ...

    def guarded_run(
        self,
        sql: str,
        max_sql_chars: int,
        limit: int,
        timeout_s: float,
        max_bytes: int,
        low_priority: bool = False,
    ) -> tuple[tuple[str, ...], QueryResult]:
        """Guard-check ``sql`` (:func:`~dabench.platform.sqlguard.check_sql` over
        :meth:`scope`), then :meth:`run` it; returns the warehouse tables it references and
        its result. Refusals and failures raise :class:`ToolError`. With ``low_priority``
        the work done in the platform's worker processes runs at low CPU priority (see
        :mod:`dabench.platform.fair_share`)."""
        ...

    def last_wait_s(self) -> float:
        """Seconds the calling thread's last query waited inside the warehouse (for a worker
        or a connection) before its timeout started."""
        ...

    @property
    def slots(self) -> int:
        """How many queries can run at once."""
        ...

    def close(self) -> None:
        """Release the connection(s)."""
        ...


def jsonable(value: Any) -> Any:
    """Convert a database value to something ``json.dumps`` accepts, deterministically."""
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


def fetch_capped(
    fetchmany: Callable[[int], Sequence[Sequence[Any]]],
    limit: int,
    max_bytes: int,
    flagged: bool = False,
) -> tuple[list[list[Any]], str | None]:
    """Stream rows until ``limit`` rows or ``max_bytes`` of JSON; returns the rows and which
    cap cut them (``None`` when the result ended first). With ``flagged``, each row's last
    value says one of its values was over the cap (the row is not returned)."""
    rows: list[list[Any]] = []
    used = 0
    while True:
        asked = min(FETCH_BATCH_ROWS, limit + 1 - len(rows))
        batch = fetchmany(asked)
        if not batch:
            return rows, None
        for raw in batch:
            if len(rows) == limit:
                return rows, "rows"
            if flagged:
                if raw[-1]:
                    return rows, "bytes"
                raw = raw[:-1]
            if any(isinstance(v, str | bytes) and len(v) > max_bytes for v in raw):
                return rows, "bytes"  # over the cap on its own: not worth converting
            row = [jsonable(v) for v in raw]
            used += len(json.dumps(row)) + 1
            if used > max_bytes:
                return rows, "bytes"
            rows.append(row)
        if len(batch) < asked:  # a short batch is the result's end: no empty fetch to see it
            return rows, None


def timeout_error(timeout_s: float) -> ToolError:
    """The platform's time-limit error, whatever the engine."""
    return ToolError(
        "QUERY_TIMEOUT",
        f"the query ran longer than the {timeout_s:g} s statement timeout",
        "aggregate earlier, filter more, or use a pre-aggregated table",
    )


def memory_error(message: str) -> ToolError:
    """The platform's memory-limit error: the query needed more than its worker may hold."""
    first = (message.strip().splitlines() or [""])[0][:300]
    detail = f" ({first})" if first else ""
    return ToolError(
        "QUERY_MEMORY_LIMIT",
        f"the query needed more memory than a query may use{detail}",
        "build smaller values (lists, strings), aggregate earlier or filter more",
    )


def sql_error(message: str) -> ToolError:
    """An engine error, first line only."""
    first = (message.strip().splitlines() or [""])[0][:500]
    return ToolError("SQL_ERROR", first, "check table and column names with describe_table")


def cancelled_error() -> ToolError:
    """The error of a call its client cancelled (``notifications/cancelled``, or the client
    went away) while its query waited or ran: the query was stopped and its slot freed."""
    return ToolError(
        "CANCELLED",
        "the call was cancelled by the client; its query was stopped",
        "nothing to do: the result was not wanted",
    )


class QueryCancel:
    """Cancellation of one call's query, asked for on the event loop while the query runs on
    a thread: :meth:`cancel` runs the hook the runner attached (which stops the query, e.g.
    kills its SQL worker) at once, or refuses a runner that has not started yet."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.cancelled = False
        self.started = False
        self._hook: Callable[[], object] | None = None
        self.attached = threading.Event()
        """Set once a hook was attached (the query holds its worker)."""

    def start(self) -> bool:
        """The runner starts (on its thread); ``False`` when the call was cancelled first."""
        with self._lock:
            if self.cancelled:
                return False
            self.started = True
            return True

    def attach(self, hook: Callable[[], object] | None) -> bool:
        """``hook`` stops the query from now on (``None``: nothing to stop any more);
        ``False`` when the call is already cancelled (nothing was attached)."""
        with self._lock:
            if self.cancelled:
                return False
            self._hook = hook
            if hook is not None:
                self.attached.set()
            return True

    def cancel(self) -> bool:
        """Cancel the call: the attached hook runs now. Returns whether the runner started
        (then the caller waits for it to end)."""
        with self._lock:
            if self.cancelled:
                return self.started
            self.cancelled = True
            hook, self._hook = self._hook, None
            started = self.started
        if hook is not None:
            hook()
        return started
