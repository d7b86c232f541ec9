"""The PostgreSQL backend: a world loaded by ``dabench world export --postgres``, served
read-only.

Start-up refuses to serve (a :class:`~dabench.errors.UserInputError` naming the reason)
unless the login role cannot write: it must not be a superuser or bypass row security, hold
no ``INSERT``/``UPDATE``/``DELETE``/``TRUNCATE`` on any table and no ``CREATE`` on any schema
or the database, and a probe ``UPDATE`` of a world table, with the session's read-only
default lifted, must be refused for lack of privilege. Every session also runs with
``default_transaction_read_only``. It also refuses a database whose world hash
(``dabench_knowledge.world``) differs from the served world's, or that lacks a world table.

Each query runs in its own read-only transaction on a pooled connection, through a
server-side cursor fetched in small batches (rows and bytes stream, as for DuckDB), with
``statement_timeout`` set from the profile and a client deadline over the whole fetch.
Values over the byte cap are replaced by ``NULL`` on the server and flagged, so none reaches
Python.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from dabench.errors import UserInputError
from dabench.platform.errors import ToolError
from dabench.platform.sqlguard import SqlScope
from dabench.platform.warehouse.base import (
    QueryResult,
    SqlDialect,
    TableColumns,
    fetch_capped,
    sql_error,
    timeout_error,
)
from dabench.platform.warehouse.priority import (
    LONG_QUERY_S,
    local_backend_pid,
    lower_backend,
    restore_backend,
)
from dabench.platform.warehouse.process_pool import KILL_GRACE_S, WorkerPool
from dabench.platform.warehouse.watchdog import Watchdog

KNOWLEDGE_SCHEMA = "dabench_knowledge"
"""Where the export writes the world's identity (``world.world_hash``)."""

GUARD_WORKERS = 2
"""Processes that run the guard for this warehouse (parsing costs their CPU, not the
platform's event loop or GIL)."""
GUARD_TIMEOUT_S = 5.0
"""At most this long to check one statement; a parse past it kills its guard process."""
GUARD_ADDRESS_SPACE = 512 * 2**20
"""Address space a guard process may add to its size at start."""

POOL_SIZE = 8
"""Connections kept open (concurrent queries beyond it wait for one)."""

_FIXED_WIDTH_OIDS = frozenset(
    {16, 20, 21, 23, 700, 701, 1082, 1083, 1114, 1184, 1186, 1266, 2950}
)  # bool, int8, int2, int4, float4, float8, date, time, timestamp(tz), interval, timetz, uuid
"""Result types whose values cannot exceed the byte cap (no size check needed)."""

_PRIVILEGE_SQL = """
SELECT r.rolsuper, r.rolbypassrls, r.rolcreaterole, r.rolcreatedb,
  ARRAY(SELECT n.nspname || '.' || c.relname FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
          AND n.nspname NOT IN ('pg_catalog', 'information_schema')
          AND n.nspname NOT LIKE 'pg_temp%%' AND n.nspname NOT LIKE 'pg_toast%%'
          AND has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')
        ORDER BY 1 LIMIT 5),
  ARRAY(SELECT nspname FROM pg_namespace WHERE has_schema_privilege(oid, 'CREATE')
        AND nspname NOT LIKE 'pg_temp%%' AND nspname NOT LIKE 'pg_toast_temp%%'
        ORDER BY 1 LIMIT 5),
  has_database_privilege(current_database(), 'CREATE'),
  ARRAY(SELECT b.rolname FROM pg_roles b WHERE b.rolname IN ('pg_write_all_data',
        'pg_write_server_files', 'pg_execute_server_program', 'pg_read_server_files')
        AND pg_has_role(r.oid, b.oid, 'USAGE') ORDER BY 1)
FROM pg_roles r WHERE r.rolname = current_user
"""


class PostgresWarehouse:
    """The world's tables in PostgreSQL, through a read-only role (a
    :class:`~dabench.platform.warehouse.base.Warehouse`)."""

    dialect: SqlDialect = "postgres"

    def __init__(
        self,
        dsn: str,
        *,
        expected_tables: frozenset[str] | None = None,
        world_hash: str | None = None,
    ) -> None:
        try:
            import pglast  # noqa: F401  (the guard's PostgreSQL parser)
            import psycopg
        except ImportError as exc:  # pragma: no cover - the postgres extra
            raise UserInputError(
                "--warehouse postgresql:// needs psycopg and pglast: "
                "pip install 'dabench[postgres]'"
            ) from exc
        self._psycopg = psycopg
        self.dsn = dsn
        self._pool: queue.LifoQueue[Any] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(POOL_SIZE)
        self._names = itertools.count()
        self._timeouts: dict[int, int] = {}
        """``id(connection)`` -> the ``statement_timeout`` (ms) its session has."""
        self._backends: dict[int, int | None] = {}
        """``id(connection)`` -> its backend's process id when on this machine (reniced
        for long queries, see :mod:`~dabench.platform.warehouse.priority`), else ``None``."""
        self._closed = False
        self._watchdog = Watchdog("pg-cancel-watchdog")
        self._local = threading.local()
        conn = self._connect()
        try:
            check_read_only(conn)
            self._tables, self._catalog = _read_tables(conn, expected_tables)
            if world_hash is not None:
                _check_world_hash(conn, world_hash)
        except BaseException:
            conn.close()
            raise
        self._pool.put(conn)
        self._scope = SqlScope(
            catalog=self._catalog,
            tables=frozenset(t for t, _ in self._tables),
            dialect="postgres",
        )
        scope = {"catalog": self._catalog, "tables": sorted(self._scope.tables)}
        self._guards = WorkerPool(
            {
                "path": None,
                "scope": {**scope, "dialect": "postgres"},
                "address_space_budget": GUARD_ADDRESS_SPACE,
            },
            GUARD_WORKERS,
        )

    def _connect(self) -> Any:
        psycopg = self._psycopg
        try:
            conn = psycopg.connect(
                self.dsn,
                autocommit=True,
                options="-c default_transaction_read_only=on -c search_path=pg_catalog",
                application_name="dabench-platform",
            )
        except psycopg.Error as exc:
            raise UserInputError(
                f"--warehouse: cannot connect to PostgreSQL: {str(exc).strip()}"
            ) from exc
        conn.read_only = True
        return conn

    def tables(self) -> TableColumns:
        """Every world table with its ``(column, type)`` list, sorted."""
        return [(t, list(cols)) for t, cols in self._tables]

    def scope(self) -> SqlScope:
        """The world's tables in PostgreSQL's dialect."""
        return self._scope

    @property
    def slots(self) -> int:
        """Queries that can run at once (pooled connections)."""
        return POOL_SIZE

    def guarded_run(
        self,
        sql: str,
        max_sql_chars: int,
        limit: int,
        timeout_s: float,
        max_bytes: int,
        low_priority: bool = False,
    ) -> tuple[tuple[str, ...], QueryResult]:
        """Guard-check ``sql`` in PostgreSQL's dialect in a guard process (its parse time is
        bounded by the query's timeout, at most :data:`GUARD_TIMEOUT_S`), then run it. With
        ``low_priority`` the guard process checks it and a local backend runs it at low CPU
        priority."""
        self._local.wait_s = 0.0
        req: dict[str, Any] = {"sql": sql, "max_sql_chars": max_sql_chars}
        if low_priority:
            req["low_priority"] = True
        answer = self._guards.request(req, min(timeout_s, GUARD_TIMEOUT_S))
        if "error" in answer:
            err = answer["error"]
            raise ToolError(str(err["code"]), str(err["message"]), str(err.get("hint", "")))
        checked, tables = str(answer["ok"]["sql"]), tuple(answer["ok"]["tables"])
        guard_wait = self._guards.last_wait_s()
        try:
            return tables, self.run(checked, limit, timeout_s, max_bytes, low_priority)
        finally:
            self._local.wait_s += guard_wait

    def last_wait_s(self) -> float:
        """Seconds this thread's last query waited for a guard process and a connection."""
        return float(getattr(self._local, "wait_s", 0.0))

    def run(
        self,
        sql: str,
        limit: int,
        timeout_s: float,
        max_bytes: int = 1024 * 1024,
        low_priority: bool = False,
    ) -> QueryResult:
        """Run one guard-checked SELECT (see the module docstring); a local backend drops
        to low CPU priority after :data:`~dabench.platform.warehouse.priority.LONG_QUERY_S`,
        or from the start with ``low_priority``."""
        psycopg = self._psycopg
        waiting = time.monotonic()
        self._slots.acquire()
        deadline = time.monotonic() + timeout_s  # the wait for a connection does not count
        self._local.wait_s = deadline - timeout_s - waiting
        try:
            conn = self._take()
            try:
                with self._niced(conn, low_priority, deadline):
                    result = self._run(conn, sql, limit, timeout_s, max_bytes, deadline)
            except psycopg.errors.QueryCanceled as exc:
                raise timeout_error(timeout_s) from exc
            except psycopg.OperationalError as exc:
                self._forget(conn)
                conn.close()  # a broken connection is not pooled again
                conn = None
                raise sql_error(str(exc)) from exc
            except psycopg.Error as exc:
                raise sql_error(str(exc)) from exc
            finally:
                if conn is not None:
                    self._give(conn)
        finally:
            self._slots.release()
        return result

    def _take(self) -> Any:
        try:
            return self._pool.get_nowait()
        except queue.Empty:
            return self._connect()

    def _give(self, conn: Any) -> None:
        if self._closed or conn.closed:
            self._forget(conn)
            conn.close()
        else:
            self._pool.put(conn)

    def _forget(self, conn: Any) -> None:
        """Drop what is kept per connection (it is being closed)."""
        self._timeouts.pop(id(conn), None)
        self._backends.pop(id(conn), None)

    @contextlib.contextmanager
    def _niced(self, conn: Any, low_priority: bool, deadline: float) -> Iterator[None]:
        """Run the body with ``conn``'s local backend at low CPU priority
        (:func:`~dabench.platform.warehouse.priority.lower_backend`) from the start
        (``low_priority``) or once it has run ``LONG_QUERY_S``; restored at the call's
        ``deadline`` (its cancel is then served at full share) and after it, or the
        connection closed where restoring is not permitted."""
        key = id(conn)
        if key not in self._backends:
            self._backends[key] = local_backend_pid(conn)
        pid = self._backends[key]
        if pid is None:
            yield
            return
        lock = threading.Lock()
        state: dict[str, Any] = {"running": True, "lowered": False, "origin": None, "ok": True}

        def demote() -> None:
            with lock:
                if state["running"]:
                    reniced, state["origin"] = lower_backend(pid)
                    state["lowered"] = reniced or state["origin"] is not None

        def restore() -> None:  # under the lock; no demotion after it
            state["running"] = False
            if state["lowered"]:
                state["lowered"] = False
                state["ok"] = restore_backend(pid, state["origin"]) and state["ok"]

        def at_deadline() -> None:
            with lock:
                restore()

        ticket = None if low_priority else self._watchdog.arm(demote, LONG_QUERY_S)
        if low_priority:
            demote()
        deadline_ticket = self._watchdog.arm(at_deadline, max(deadline - time.monotonic(), 0))
        try:
            yield
        finally:
            for t in (ticket, deadline_ticket):
                if t is not None:
                    self._watchdog.disarm(t)
            with lock:
                restore()
                if not state["ok"] and not conn.closed:
                    self._forget(conn)
                    conn.close()  # may not raise its priority again: a new backend

    def _run(
        self, conn: Any, sql: str, limit: int, timeout_s: float, max_bytes: int, deadline: float
    ) -> QueryResult:
        ms = max(1, int(timeout_s * 1000))
        if self._timeouts.get(id(conn)) != ms:
            conn.execute(f"SET statement_timeout = {ms}")
            self._timeouts[id(conn)] = ms
        # statement_timeout covers each statement (DECLARE, every FETCH); the watchdog
        # cancels the backend at the call's deadline, whichever statement it is in, and a
        # backend busy where PostgreSQL does not check for a cancel (repeat, regexp_replace
        # building a huge value) is abandoned KILL_GRACE_S later: the socket is shut down,
        # so this call returns; the backend stops when its function returns
        left = max(deadline - time.monotonic(), 0.001)
        abandoned = threading.Event()

        def abandon() -> None:
            abandoned.set()
            _shutdown_socket(conn)

        ticket = self._watchdog.arm(conn.cancel, left)
        kill_ticket = self._watchdog.arm(abandon, left + KILL_GRACE_S)
        try:
            with conn.transaction():
                described = _describe(conn, sql)
                wrapped, flagged = _bounded_values(sql, described, max_bytes)
                with conn.cursor(name=f"dabench_q{next(self._names)}") as cur:
                    cur.execute(wrapped.encode())

                    def fetchmany(n: int) -> list[Any]:
                        if time.monotonic() > deadline:
                            raise self._psycopg.errors.QueryCanceled("client deadline")
                        return list(cur.fetchmany(n))

                    rows, truncated_by = fetch_capped(fetchmany, limit, max_bytes, flagged)
        except self._psycopg.OperationalError as exc:
            if abandoned.is_set():
                raise self._psycopg.errors.QueryCanceled("abandoned past the deadline") from exc
            raise
        finally:
            cancelled = not self._watchdog.disarm(ticket)
            if not self._watchdog.disarm(kill_ticket) or cancelled:
                # the cancel was sent: it could still hit the connection's next query
                conn.close()
        columns = [{"name": name, "type": dtype} for name, dtype, _oid in described]
        return QueryResult(
            columns=columns, rows=rows, truncated=truncated_by is not None,
            truncated_by=truncated_by,
        )  # fmt: skip

    def close(self) -> None:
        """Close every pooled connection and the guard processes."""
        self._closed = True
        self._guards.close()
        while True:
            try:
                self._pool.get_nowait().close()
            except queue.Empty:
                return


def _shutdown_socket(conn: Any) -> None:
    """End a connection whose backend ignores the cancel: shutting its socket down (on a
    duplicate descriptor: the connection still owns its own) makes the blocked libpq read
    fail at once in the thread that waits on it."""
    try:
        sock = socket.socket(fileno=os.dup(conn.pgconn.socket))
    except OSError:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


def _describe(conn: Any, sql: str) -> list[tuple[str, str, int]]:
    """The result columns of ``sql`` as ``(name, type display, type oid)``, from the
    protocol's Parse and Describe: the statement is parsed and analysed, neither planned nor
    run, so its constant expressions are not evaluated (a ``LIMIT 0`` probe plans, and so
    folds them, once more than the query itself)."""
    psycopg = sys.modules["psycopg"]
    pgconn = conn.pgconn
    ok = psycopg.pq.ExecStatus.COMMAND_OK
    res = pgconn.prepare(b"", sql.encode())
    if res.status != ok:
        field = psycopg.pq.DiagnosticField
        state = (res.error_field(field.SQLSTATE) or b"XX000").decode()
        message = res.error_field(field.MESSAGE_PRIMARY) or res.error_message or b""
        raise psycopg.errors.lookup(state)(message.decode(errors="replace").strip())
    res = pgconn.describe_prepared(b"")
    if res.status != ok:  # pragma: no cover - a statement that just parsed
        raise psycopg.OperationalError((res.error_message or b"").decode(errors="replace"))
    types = conn.adapters.types
    out = []
    for i in range(res.nfields):
        oid, fmod = res.ftype(i), res.fmod(i)
        info = types.get(oid)
        display = info.get_type_display(oid=oid, fmod=fmod) if info else str(oid)
        out.append(((res.fname(i) or b"").decode(), display, oid))
    return out


def _bounded_values(
    sql: str, described: list[tuple[str, str, int]], max_bytes: int
) -> tuple[str, bool]:
    """Wrap ``sql`` so no value over ``max_bytes`` leaves the server: such a value becomes
    ``NULL`` and a last boolean column flags its row. The derived table's column list renames
    columns by position, so duplicate names are fine; its ``OFFSET 0`` keeps PostgreSQL from
    pulling the query up into the wrapper, where each expression would be evaluated once per
    reference (the value, its size, the flag). ``sql`` is guard-checked (one statement, no
    unterminated quote or comment)."""
    sized = [i for i, (_n, _t, oid) in enumerate(described) if oid not in _FIXED_WIDTH_OIDS]
    if not sized or not described:
        return sql, False
    aliases = ", ".join(f"c{i}" for i in range(len(described)))
    cols = []
    for i, (name, _t, _oid) in enumerate(described):
        alias = '"' + name.replace('"', '""') + '"'
        if i in sized:
            size = f"octet_length(CAST(c{i} AS text))"
            cols.append(f"CASE WHEN {size} > {max_bytes} THEN NULL ELSE c{i} END AS {alias}")
        else:
            cols.append(f"c{i} AS {alias}")
    flag = " OR ".join(
        f"coalesce(octet_length(CAST(c{i} AS text)) > {max_bytes}, false)" for i in sized
    )
    wrapped = (
        f"SELECT {', '.join(cols)}, ({flag}) AS oversize "
        f"FROM (SELECT * FROM (\n{sql}\n) AS q0 OFFSET 0) AS q({aliases})"
    )
    return wrapped, True


def check_read_only(conn: Any) -> None:
    """Refuse (``UserInputError``) unless the connection's role cannot write."""
    row = conn.execute(_PRIVILEGE_SQL).fetchone()
    if row is None:  # pragma: no cover - current_user is always a role
        raise UserInputError("--warehouse: cannot read the login role's attributes")
    superuser, bypass, createrole, createdb, writable, schemas, db_create, roles = row
    problems = []
    if superuser:
        problems.append("it is a superuser")
    if bypass:
        problems.append("it bypasses row-level security")
    if createrole or createdb:
        problems.append("it may create roles or databases")
    if writable:
        problems.append(f"it may write tables ({', '.join(writable)})")
    if schemas:
        problems.append(f"it may create objects in schemas ({', '.join(schemas)})")
    if db_create:
        problems.append("it may create schemas in the database")
    if roles:
        problems.append(f"it is a member of {', '.join(roles)}")
    if not problems:
        problems.extend(_write_probe(conn))
    if problems:
        raise UserInputError(
            "--warehouse: refusing to serve through a role that can write: "
            + "; ".join(problems)
            + ". Connect as a SELECT-only role (dabench platform pg-role creates one)."
        )
    on = conn.execute("SHOW default_transaction_read_only").fetchone()
    if on is None or on[0] != "on":  # pragma: no cover - set by the connection options
        raise UserInputError("--warehouse: the session is not read-only")


def _write_probe(conn: Any) -> list[str]:
    """Try an ``UPDATE ... WHERE false`` of one table, read-only default lifted: the
    privilege check must refuse it (nothing is changed either way: it matches no row and is
    rolled back)."""
    import psycopg

    row = conn.execute(
        "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name), "
        "quote_ident(column_name) FROM information_schema.columns "
        "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
        "ORDER BY table_schema, table_name, ordinal_position LIMIT 1"
    ).fetchone()
    if row is None:
        return []
    table, column = row
    try:
        with conn.transaction(force_rollback=True):
            conn.execute("SET TRANSACTION READ WRITE")
            conn.execute(f"UPDATE {table} SET {column} = {column} WHERE false")
    except psycopg.errors.InsufficientPrivilege:
        return []
    except psycopg.Error as exc:
        return [f"the write probe on {table} failed unexpectedly ({str(exc).strip()})"]
    return [f"a probe UPDATE of {table} was allowed"]


def _read_tables(conn: Any, expected: frozenset[str] | None) -> tuple[TableColumns, str]:
    rows = conn.execute(
        "SELECT table_schema, table_name, column_name, data_type "
        "FROM information_schema.columns "
        "WHERE table_schema NOT IN ('information_schema', 'pg_catalog', %s) "
        "AND table_schema NOT LIKE 'pg_%%' "
        "ORDER BY table_schema, table_name, ordinal_position",
        (KNOWLEDGE_SCHEMA,),
    ).fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for schema, table, column, dtype in rows:
        out.setdefault(f"{schema}.{table}".lower(), []).append((str(column), str(dtype)))
    if expected is not None:
        missing = sorted(expected - set(out))
        if missing:
            raise UserInputError(
                f"--warehouse: {len(missing)} world table(s) are missing or not readable by "
                f"this role ({', '.join(missing[:5])}); load the world with `dabench world "
                "export --postgres` and grant SELECT (dabench platform pg-role)"
            )
        out = {t: cols for t, cols in out.items() if t in expected}
    row = conn.execute("SELECT current_database()").fetchone()
    return sorted(out.items()), str(row[0]) if row else ""


def _check_world_hash(conn: Any, world_hash: str) -> None:
    import psycopg

    try:
        with conn.transaction():
            row = conn.execute(f"SELECT world_hash FROM {KNOWLEDGE_SCHEMA}.world").fetchone()
    except psycopg.Error as exc:
        raise UserInputError(
            f"--warehouse: cannot read {KNOWLEDGE_SCHEMA}.world ({str(exc).strip()}); load "
            "the world with `dabench world export --postgres`"
        ) from exc
    if row is None or row[0] != world_hash:
        raise UserInputError(
            f"--warehouse: the database holds world {str(row[0] if row else None)[:12]}, "
            f"not the served world {world_hash[:12]}; export this world into it first"
        )
