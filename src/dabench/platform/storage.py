"""A tiny SQL store shared by the audit log and the platform state: SQLite (WAL) or PostgreSQL.

Callers write portable SQL with ``?`` placeholders; :class:`Database` rewrites them to
``%s`` for psycopg. One connection per store guarded by a lock: every write commits
before the call returns, which is what makes the audit log durable before a tool
response leaves the server.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dabench.errors import UserInputError

Row = dict[str, Any]


class Database:
    """A locked single connection to SQLite (file, WAL mode) or PostgreSQL (DSN)."""

    def __init__(self, *, sqlite_path: Path | None = None, dsn: str | None = None) -> None:
        if (sqlite_path is None) == (dsn is None):
            raise ValueError("give exactly one of sqlite_path or dsn")
        self._lock = threading.Lock()
        self.dialect = "sqlite" if sqlite_path is not None else "postgres"
        self._conn: Any
        if sqlite_path is not None:
            sqlite_path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(sqlite_path), check_same_thread=False, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=5000")
            self._conn = conn
        else:
            try:
                import psycopg
                from psycopg.rows import dict_row
            except ImportError as exc:  # pragma: no cover - psycopg is a dev/extra dependency
                raise UserInputError(
                    "--audit-dsn needs psycopg: pip install 'dabench[postgres]'"
                ) from exc
            try:
                assert dsn is not None
                self._conn = psycopg.connect(dsn, autocommit=True, row_factory=dict_row)
            except psycopg.Error as exc:
                raise UserInputError(f"cannot connect to PostgreSQL ({dsn}): {exc}") from exc

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.dialect == "postgres" else sql

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run one statement and commit."""
        with self._lock:
            self._conn.execute(self._sql(sql), tuple(params))

    def executescript(self, statements: Sequence[str]) -> None:
        """Run several DDL statements (schema setup)."""
        with self._lock:
            for stmt in statements:
                self._conn.execute(stmt)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run a query and return its rows as dicts."""
        with self._lock:
            cur = self._conn.execute(self._sql(sql), tuple(params))
            return [dict(r) for r in cur.fetchall()]

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """Hold the lock and run several statements atomically."""
        with self._lock:
            if self.dialect == "sqlite":
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield _Tx(self)
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                self._conn.execute("COMMIT")
            else:
                with self._conn.transaction():
                    yield _Tx(self)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


class _Tx(Database):
    """A view of a :class:`Database` inside :meth:`Database.transaction` (lock already held)."""

    def __init__(self, parent: Database) -> None:
        self._parent = parent
        self.dialect = parent.dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._parent._conn.execute(self._sql(sql), tuple(params))

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        cur = self._parent._conn.execute(self._sql(sql), tuple(params))
        return [dict(r) for r in cur.fetchall()]
