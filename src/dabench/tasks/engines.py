"""Recomputing the truth lock against a warehouse exported to another engine.

``dabench tasks validate --warehouse WHERE`` opens ``WHERE`` (a PostgreSQL DSN, a DuckDB file
or a Parquet export directory, see :mod:`dabench.world.export_sql`), runs every task's truth
SQL there and compares the result with the truth computed on the world itself. DuckDB SQL is
translated to PostgreSQL with ``sqlglot``; a task whose truth SQL cannot be translated carries
its own per dialect (``grading.truth_sql_dialects: {postgres: ...}``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb
import sqlglot
from sqlglot import exp

from dabench.errors import UserInputError
from dabench.tasks.loader import TaskSet
from dabench.tasks.lock import gradings
from dabench.tasks.model import Grading, Truth, TruthLock
from dabench.world.warehouse import OFFLINE_CONFIG

Dialect = Literal["duckdb", "postgres"]
DATE_PART_FUNCTIONS: dict[type[exp.Expression], str] = {
    exp.Hour: "HOUR",
    exp.Minute: "MINUTE",
    exp.Second: "SECOND",
}
"""DuckDB date-part functions that ``sqlglot`` leaves untranslated for PostgreSQL."""
REL_TOL = 1e-9
"""Relative tolerance for floating-point cells (engines sum doubles in different orders)."""


@dataclass
class Engine:
    """A warehouse in some engine: how to run one SELECT."""

    label: str
    dialect: Dialect
    run: Callable[[str], tuple[list[str], list[list[Any]]]]
    close: Callable[[], None]


def _cell(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return value


def duckdb_engine(con: duckdb.DuckDBPyConnection, label: str) -> Engine:
    """An engine over an open DuckDB connection (closed with the engine)."""

    def run(sql: str) -> tuple[list[str], list[list[Any]]]:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description or []]
        return cols, [[_cell(v) for v in row] for row in cur.fetchall()]

    return Engine(label, "duckdb", run, con.close)


def open_engine(where: str) -> Engine:
    """The warehouse at ``where``: ``postgresql://...``, a ``.duckdb`` file or a Parquet
    export directory."""
    if where.startswith(("postgresql://", "postgres://")):
        return postgres_engine(where)
    path = Path(where)
    if path.is_file():
        con = duckdb.connect(str(path), read_only=True, config=dict(OFFLINE_CONFIG))
        return duckdb_engine(con, f"duckdb {path}")
    if path.is_dir() and (path / "export.json").exists():
        return _parquet_engine(path)
    raise UserInputError(
        f"--warehouse {where!r}: expected a postgresql:// DSN, a DuckDB file or a Parquet "
        "export directory (dabench world export)"
    )


def _parquet_engine(root: Path) -> Engine:
    config = {k: v for k, v in OFFLINE_CONFIG.items() if k != "enable_external_access"}
    con = duckdb.connect(":memory:", config=config)
    con.execute("SET allowed_directories = ?", [[str(root.resolve())]])
    con.execute("SET enable_external_access = false")
    for file in sorted(root.glob("*/*.parquet")):
        schema, table = file.parent.name, file.stem
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        literal = str(file.resolve()).replace("'", "''")
        con.execute(
            f'CREATE VIEW "{schema}"."{table}" AS SELECT * FROM read_parquet(\'{literal}\')'
        )
    return duckdb_engine(con, f"parquet {root}")


def postgres_engine(dsn: str) -> Engine:
    """A read-only autocommit PostgreSQL engine."""
    import psycopg

    try:
        pg = psycopg.connect(dsn, autocommit=True)
    except psycopg.Error as exc:
        raise UserInputError(f"--warehouse: cannot connect to PostgreSQL: {exc}") from exc
    pg.execute("SET default_transaction_read_only = on")

    def run(sql: str) -> tuple[list[str], list[list[Any]]]:
        with pg.cursor() as cur:
            cur.execute(sql.encode())
            cols = [d.name for d in cur.description or []]
            return cols, [[_cell(v) for v in row] for row in cur.fetchall()]

    return Engine("postgres", "postgres", run, pg.close)


def dialect_of_sql_tool(description: str) -> Dialect:
    """The dialect a SQL tool's description names: the reference platform's ``sql_query``
    says ``(PostgreSQL dialect)`` when it serves a PostgreSQL warehouse; DuckDB otherwise."""
    return "postgres" if "postgresql dialect" in description.lower() else "duckdb"


def truth_sql_for(grading: Grading, dialect: Dialect) -> str | None:
    """The grading's truth SQL in ``dialect``: its own override, else translated from DuckDB."""
    if grading.truth_sql is None:
        return None
    if dialect == "duckdb":
        return grading.truth_sql
    override = grading.truth_sql_dialects.get(dialect)
    if override:
        return override
    return to_postgres(grading.truth_sql)


def to_postgres(sql: str) -> str:
    """DuckDB SQL as PostgreSQL, with three gaps of ``sqlglot``'s translation closed: a derived
    table without an alias gets one (PostgreSQL requires it), ``INTERVAL (-8) HOUR`` becomes
    ``INTERVAL '-8 HOUR'`` (translated as ``INTERVAL HOUR`` otherwise), and DuckDB's date-part
    functions (``hour(ts)`` ...) become ``CAST(EXTRACT(HOUR FROM ts) AS BIGINT)``."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    for kind, part in DATE_PART_FUNCTIONS.items():
        for fn in list(tree.find_all(kind)):
            extract = exp.Extract(this=exp.var(part), expression=fn.this)
            fn.replace(exp.cast(extract, exp.DataType.build("BIGINT")))
    for n, sub in enumerate(list(tree.find_all(exp.Subquery))):
        if not sub.alias and isinstance(sub.parent, exp.From | exp.Join):
            sub.set("alias", exp.TableAlias(this=exp.to_identifier(f"_derived{n}")))
    for interval in list(tree.find_all(exp.Interval)):
        value = interval.this
        while isinstance(value, exp.Paren):
            value = value.this
        number = value.this if isinstance(value, exp.Neg) else value
        if isinstance(number, exp.Literal) and not number.is_string and value is not interval.this:
            sign = "-" if isinstance(value, exp.Neg) else ""
            interval.set("this", exp.Literal.string(f"{sign}{number.this}"))
    return tree.sql(dialect="postgres")


def _same_cell(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return bool(a == b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=1e-9)
    return bool(a == b)


def _same_rows(want: list[list[Any]], got: list[list[Any]], ordered: bool) -> bool:
    if len(want) != len(got) or any(len(w) != len(g) for w, g in zip(want, got, strict=True)):
        return False
    if not ordered:
        key = lambda row: [str(round(v, 6)) if isinstance(v, float) else str(v) for v in row]  # noqa: E731
        want, got = sorted(want, key=key), sorted(got, key=key)
    return all(
        _same_cell(a, b) for w, g in zip(want, got, strict=True) for a, b in zip(w, g, strict=True)
    )


@dataclass
class WarehouseCheck:
    """The outcome of recomputing the lock on one warehouse."""

    engine: str
    checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every truth matched."""
        return not self.problems


def check_warehouse(task_set: TaskSet, lock: TruthLock, engine: Engine) -> WarehouseCheck:
    """Recompute every truth SQL of ``task_set`` on ``engine`` and compare with ``lock``."""
    report = WarehouseCheck(engine.label)
    for item in task_set.items:
        for key, grading in gradings(item):
            sql = truth_sql_for(grading, engine.dialect)
            want: Truth | None = lock.truths.get(key)
            if sql is None or want is None:
                continue
            report.checked += 1
            try:
                _cols, rows = engine.run(sql)
            except Exception as exc:  # the engine's own error, reported per task
                report.problems.append(f"{key}: truth SQL failed on {engine.label}: {exc}")
                continue
            ordered = " order by " in sql.lower()
            if not _same_rows(want.rows, rows, ordered):
                report.problems.append(
                    f"{key}: {engine.label} gives {rows[:3]!r}, the world {want.rows[:3]!r}"
                )
    return report
