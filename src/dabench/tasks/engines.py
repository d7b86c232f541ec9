"""Recomputing the truth lock against a warehouse exported to another engine.

``dabench tasks validate --warehouse WHERE`` opens ``WHERE`` (a PostgreSQL DSN, a DuckDB file,
a SQLite file or a Parquet export directory, see :mod:`dabench.world.export_sql` and
:mod:`dabench.world.export_sqlite`), runs every task's truth SQL there and compares the result
with the truth computed on the world itself. DuckDB SQL is translated to PostgreSQL or SQLite
with ``sqlglot`` (for SQLite, ``schema.table`` also becomes the export's flattened
``schema__table``); a task whose truth SQL cannot be translated carries its own per dialect
(``grading.truth_sql_dialects: {postgres: ..., sqlite: ...}``).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb
import sqlglot
from sqlglot import exp

from dabench.errors import UserInputError
from dabench.interruptible import bounded
from dabench.tasks.loader import TaskSet
from dabench.tasks.lock import gradings
from dabench.tasks.model import Grading, Truth, TruthLock
from dabench.world.export_sqlite import SEPARATOR, sqlite_table
from dabench.world.warehouse import OFFLINE_CONFIG

Dialect = Literal["duckdb", "postgres", "sqlite"]
DATE_PART_FUNCTIONS: dict[type[exp.Expression], str] = {
    exp.Hour: "HOUR",
    exp.Minute: "MINUTE",
    exp.Second: "SECOND",
}
"""DuckDB date-part functions that ``sqlglot`` leaves untranslated for PostgreSQL."""
REL_TOL = 1e-9
"""Relative tolerance for floating-point cells (engines sum doubles in different orders)."""
QUERY_TIMEOUT_S = 60.0
"""How long one truth, naive or variant query may run before it is interrupted (by default;
``DABENCH_TRUTH_TIMEOUT_S`` sets another limit, e.g. for a large-scale world)."""


def query_timeout_s() -> float:
    """The limit in force: ``DABENCH_TRUTH_TIMEOUT_S`` when set to a positive number, else
    :data:`QUERY_TIMEOUT_S`."""
    raw = os.environ.get("DABENCH_TRUTH_TIMEOUT_S", "").strip()
    if not raw:
        return QUERY_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (value > 0 and math.isfinite(value)):
        raise UserInputError(
            f"DABENCH_TRUTH_TIMEOUT_S={raw!r}: expected a positive number of seconds"
        )
    return value


Rows = tuple[list[str], list[list[Any]]]


@dataclass
class Engine:
    """A warehouse in some engine: how to run one SELECT."""

    label: str
    dialect: Dialect
    run: Callable[[str], Rows]
    close: Callable[[], None]


def _bounded_engine(
    label: str,
    dialect: Dialect,
    run: Callable[[str], Rows],
    interrupt: Callable[[], None],
    close: Callable[[], None],
) -> Engine:
    """An engine whose every query is bounded by :func:`query_timeout_s` and Ctrl-C."""
    return Engine(
        label, dialect, lambda sql: bounded(lambda: run(sql), interrupt, query_timeout_s()), close
    )


def _cell(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return value


def duckdb_engine(con: duckdb.DuckDBPyConnection, label: str) -> Engine:
    """An engine over an open DuckDB connection (closed with the engine)."""

    def run(sql: str) -> Rows:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description or []]
        return cols, [[_cell(v) for v in row] for row in cur.fetchall()]

    return _bounded_engine(label, "duckdb", run, con.interrupt, con.close)


def open_engine(where: str) -> Engine:
    """The warehouse at ``where``: ``postgresql://...``, a ``.duckdb`` file or a Parquet
    export directory."""
    if where.startswith(("postgresql://", "postgres://")):
        return postgres_engine(where)
    path = Path(where)
    if path.is_file() and _is_sqlite(path):
        return _sqlite_engine(path)
    if path.is_file():
        con = duckdb.connect(str(path), read_only=True, config=dict(OFFLINE_CONFIG))
        return duckdb_engine(con, f"duckdb {path}")
    if path.is_dir() and (path / "export.json").exists():
        return _parquet_engine(path)
    raise UserInputError(
        f"--warehouse {where!r}: expected a postgresql:// DSN, a DuckDB or SQLite file or a "
        "Parquet export directory (dabench world export)"
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


SQLITE_HEADER = b"SQLite format 3\x00"


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(len(SQLITE_HEADER)) == SQLITE_HEADER


def _sqlite_engine(path: Path) -> Engine:
    import sqlite3

    # queries run in a worker thread (see :func:`bounded`)
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)

    def run(sql: str) -> Rows:
        cur = con.execute(sql)
        cols = [d[0] for d in cur.description or []]
        return cols, [[_cell(v) for v in row] for row in cur.fetchall()]

    return _bounded_engine(f"sqlite {path}", "sqlite", run, con.interrupt, con.close)


def postgres_engine(dsn: str) -> Engine:
    """A read-only autocommit PostgreSQL engine."""
    import psycopg

    try:
        pg = psycopg.connect(dsn, autocommit=True)
    except psycopg.Error as exc:
        raise UserInputError(f"--warehouse: cannot connect to PostgreSQL: {exc}") from exc
    pg.execute("SET default_transaction_read_only = on")

    def run(sql: str) -> Rows:
        with pg.cursor() as cur:
            cur.execute(sql.encode())
            cols = [d.name for d in cur.description or []]
            return cols, [[_cell(v) for v in row] for row in cur.fetchall()]

    return _bounded_engine("postgres", "postgres", run, pg.cancel_safe, pg.close)


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
    if dialect == "sqlite":
        return to_sqlite(grading.truth_sql)
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


SQLITE_PARTS: dict[str, str] = {
    "YEAR": "%Y", "MONTH": "%m", "DAY": "%d", "HOUR": "%H", "MINUTE": "%M", "SECOND": "%S",
    "DOW": "%w", "DAYOFWEEK": "%w", "DOY": "%j", "DAYOFYEAR": "%j",
}  # fmt: skip
"""Date parts and the ``strftime`` format that yields them in SQLite."""
SQLITE_PART_FUNCTIONS: dict[type[exp.Expression], str] = {
    exp.Year: "YEAR", exp.Month: "MONTH", exp.Day: "DAY", exp.Hour: "HOUR",
    exp.Minute: "MINUTE", exp.Second: "SECOND", exp.DayOfWeek: "DOW", exp.DayOfYear: "DOY",
}  # fmt: skip
SQLITE_TRUNC: dict[str, tuple[str, str | None]] = {
    "YEAR": ("DATE", "start of year"), "MONTH": ("DATE", "start of month"),
    "DAY": ("DATE", None),
}  # fmt: skip
"""``date_trunc`` units SQLite's date functions express: function and modifier."""


def _fn(name: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def _strftime_int(fmt: str, value: exp.Expression) -> exp.Expression:
    return exp.cast(_fn("STRFTIME", exp.Literal.string(fmt), value), exp.DataType.build("INT"))


def _interval_modifier(interval: exp.Interval, sign: int) -> str | None:
    """``'-8 hours'`` for ``INTERVAL (-8) HOUR`` (``sign`` -1 when subtracted)."""
    value = interval.this
    while isinstance(value, exp.Paren):
        value = value.this
    negative = isinstance(value, exp.Neg)
    number = value.this if negative else value
    unit = interval.unit.name.lower() if interval.unit is not None else ""
    if not isinstance(number, exp.Literal) or number.is_string or not unit:
        return None
    amount = float(number.this) * (-1 if negative else 1) * sign
    text = str(int(amount)) if amount == int(amount) else str(amount)
    return f"{text} {unit.rstrip('s')}s"


def _median(select: exp.Select) -> exp.Expression | None:
    """``SELECT median(e) FROM ... [WHERE ...]`` (one projection, no grouping) as the mean of
    the middle row(s) by ``row_number()``: SQLite has no median."""
    if len(select.expressions) != 1 or select.args.get("group"):
        return None
    head = select.expressions[0]
    median = head.this if isinstance(head, exp.Alias) else head
    if not isinstance(median, exp.Median):
        return None
    inner = select.copy()
    inner.set("expressions", [exp.alias_(median.this.copy(), "_m")])
    inner = inner.where(exp.Not(this=exp.Is(this=median.this.copy(), expression=exp.Null())))
    ranked = exp.select(
        "_m", "row_number() OVER (ORDER BY _m) AS _r", "count(*) OVER () AS _n"
    ).from_(inner.subquery())
    name = head.alias if isinstance(head, exp.Alias) else None
    avg: exp.Expression = exp.Avg(this=exp.column("_m"))
    if name:
        avg = exp.Alias(this=avg, alias=exp.to_identifier(name))
    where = sqlglot.parse_one("_r IN ((_n + 1) / 2, (_n + 2) / 2)", read="sqlite")  # integer /
    return exp.select(avg).from_(ranked.subquery()).where(where)


def _inline_ctes(tree: exp.Expr) -> exp.Expr:
    """A query whose non-recursive ``WITH`` names are replaced by their subqueries (SQLite
    servers such as ``mcp-server-sqlite`` run only text that starts with ``SELECT``)."""
    with_ = tree.args.get("with_")
    if not isinstance(with_, exp.With) or with_.args.get("recursive"):
        return tree
    ctes = [(cte.alias, cte.this) for cte in with_.expressions]
    tree.set("with_", None)
    for i, (name, body) in enumerate(ctes):
        # in order: a later CTE may name an earlier one, never the reverse
        for scope in [tree, *(later for _, later in ctes[i + 1 :])]:
            for table in list(scope.find_all(exp.Table)):
                if table.name == name and table.args.get("db") is None:
                    alias = exp.TableAlias(this=exp.to_identifier(table.alias or name))
                    table.replace(exp.Subquery(this=body.copy(), alias=alias))
    return tree


def sql_in_dialect(sql: str, dialect: Dialect) -> str:
    """DuckDB SQL in ``dialect`` (:func:`to_postgres`, :func:`to_sqlite`, or as is)."""
    if dialect == "postgres":
        return to_postgres(sql)
    if dialect == "sqlite":
        return to_sqlite(sql)
    return sql


def table_name_in(dataset_id: str, dialect: Dialect) -> str:
    """A dataset's table as a target of ``dialect`` names it (``sales__orders`` in the
    ``--sqlite`` export, else the catalog id)."""
    return sqlite_table(dataset_id) if dialect == "sqlite" else dataset_id


def to_sqlite(sql: str) -> str:
    """DuckDB SQL as SQLite over the ``--sqlite`` export: ``schema.table`` becomes the
    flattened ``schema__table`` (also in qualified column references); date parts
    (``year(x)``, ``EXTRACT``), ``epoch``, ``date_trunc`` to year/month/day, ``± INTERVAL``
    and a lone ``median`` become SQLite's ``strftime``/``date``/``datetime`` forms (which
    ``sqlglot`` leaves as DuckDB's), ``WITH`` names are inlined as subqueries; ``sqlglot``
    translates the rest (``/`` stays a real division)."""
    tree = _inline_ctes(sqlglot.parse_one(sql, read="duckdb"))
    for table in list(tree.find_all(exp.Table)):
        if table.args.get("db") is not None:
            flat = sqlite_table(f"{table.db}.{table.name}")
            table.set("db", None)
            table.set("this", exp.to_identifier(flat))
    for column in list(tree.find_all(exp.Column)):
        if column.args.get("db") is not None:
            flat = sqlite_table(f"{column.db}.{column.table}")
            column.set("db", None)
            column.set("table", exp.to_identifier(flat))
    for kind, part in SQLITE_PART_FUNCTIONS.items():
        for node in list(tree.find_all(kind)):
            node.replace(_strftime_int(SQLITE_PARTS[part], node.this))
    for ext in list(tree.find_all(exp.Extract)):
        fmt = SQLITE_PARTS.get(ext.this.name.upper())
        if fmt is not None:
            ext.replace(_strftime_int(fmt, ext.expression))
    for epoch in list(tree.find_all(exp.TimeToUnix)):
        arg = epoch.this
        if isinstance(arg, exp.Sub):
            left = _strftime_int("%s", arg.this)
            epoch.replace(
                exp.paren(exp.Sub(this=left, expression=_strftime_int("%s", arg.expression)))
            )
        else:
            epoch.replace(_strftime_int("%s", arg))
    for trunc in list(tree.find_all(exp.TimestampTrunc, exp.DateTrunc)):
        unit = trunc.args.get("unit")
        form = SQLITE_TRUNC.get(unit.name.upper()) if unit is not None else None
        if form is not None:
            name, modifier = form
            args = [trunc.this] + ([exp.Literal.string(modifier)] if modifier else [])
            trunc.replace(_fn(name, *args))
    for op in list(tree.find_all(exp.Add, exp.Sub)):
        if isinstance(op.expression, exp.Interval):
            modifier = _interval_modifier(op.expression, -1 if isinstance(op, exp.Sub) else 1)
            if modifier is not None:
                op.replace(_fn("DATETIME", op.this, exp.Literal.string(modifier)))
    for select in list(tree.find_all(exp.Select)):
        median = _median(select)
        if median is not None:
            tree = median if select is tree else tree
            select.replace(median)
    return tree.sql(dialect="sqlite")


def sqlite_to_duckdb(sql: str) -> str:
    """SQLite SQL over the ``--sqlite`` export as DuckDB SQL over the world: a flattened
    ``schema__table`` becomes ``schema.table`` again; unchanged when it does not parse, so
    the grader reports the parse error itself."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except sqlglot.errors.SqlglotError:
        return sql
    for table in list(tree.find_all(exp.Table)):
        schema, sep, name = table.name.partition(SEPARATOR)
        if sep and schema and name and table.args.get("db") is None:
            table.set("db", exp.to_identifier(schema))
            table.set("this", exp.to_identifier(name))
    return tree.sql(dialect="duckdb")
