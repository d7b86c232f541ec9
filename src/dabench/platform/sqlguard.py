"""The read-only SQL guard: exactly one SELECT-like statement, no file or network access.

Parsed with sqlglot (DuckDB dialect). The guard fails closed: SQL it cannot parse is
refused. The warehouse connection is read-only with external access disabled anyway
(defence in depth); the guard exists to give the agent a clear, audited refusal.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from dabench.platform.errors import ToolError

logging.getLogger("sqlglot").setLevel(logging.ERROR)

FORBIDDEN_FUNCTION_PREFIXES: tuple[str, ...] = (
    "read_",
    "parquet_",
    "sniff_csv",
    "glob",
    "query",
    "query_table",
    "iceberg_",
    "delta_",
    "getenv",
    "httpfs",
    "http_",
    "s3_",
    "load_",
    "install_",
    "duckdb_secrets",
    "duckdb_extensions",
    "duckdb_settings",
    "current_setting",
    "pragma_",
    "write_",
    "copy_",
    "attach",
    "detach",
    "checkpoint",
)
"""Table and scalar functions refused by name prefix (file, network, settings, state)."""

_WRITE_NODES: tuple[type[exp.Expression], ...] = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.Copy,
    exp.Attach,
    exp.Detach,
    exp.Set,
    exp.Pragma,
    exp.Command,
    exp.Use,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.Install,
)


@dataclass(frozen=True)
class CheckedSql:
    """A statement the guard accepted and the tables it references."""

    sql: str
    """The SQL to execute (the input with trailing semicolons removed)."""
    tables: tuple[str, ...]
    """Referenced ``schema.table`` names (CTE names excluded), sorted, unique."""


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.sql_name().lower()


def _refuse(code: str, message: str, hint: str) -> ToolError:
    return ToolError(code, message, hint)


def check_sql(sql: str, max_chars: int) -> CheckedSql:
    """Accept one read-only query or raise :class:`ToolError` with a specific code.

    Verdicts of recent statements are cached (repeated queries are common in benchmarks).
    """
    if len(sql) > max_chars:
        raise _refuse(
            "SQL_TOO_LONG",
            f"the SQL is {len(sql)} characters; the limit is {max_chars}",
            "shorten the query",
        )
    verdict = _cached_check(sql) if len(sql) <= _CACHE_MAX_CHARS else _guarded_check(sql)
    if isinstance(verdict, ToolError):
        raise ToolError(verdict.code, verdict.body.message, verdict.body.hint)
    return verdict


_CACHE_MAX_CHARS = 4000


def _guarded_check(sql: str) -> CheckedSql | ToolError:
    try:
        return _check(sql)
    except ToolError as exc:
        return exc
    except RecursionError:
        return _refuse(
            "SQL_PARSE_ERROR", "the SQL is nested too deeply to parse", "flatten the query"
        )


_cached_check = functools.lru_cache(maxsize=1024)(_guarded_check)


def _check(sql: str) -> CheckedSql:
    if "\x00" in sql:
        raise _refuse("SQL_PARSE_ERROR", "the SQL contains a NUL character", "remove it")
    if not sql.strip().strip(";").strip():
        raise _refuse("SQL_EMPTY", "no SQL statement given", "pass one SELECT statement")
    try:
        statements = [s for s in sqlglot.parse(sql, read="duckdb") if s is not None]
    except (ParseError, TokenError) as exc:
        first = str(exc).splitlines()[0][:300]
        raise _refuse(
            "SQL_PARSE_ERROR",
            f"the SQL could not be parsed: {first}",
            "write one DuckDB SELECT (or WITH ... SELECT) statement",
        ) from exc
    if len(statements) != 1:
        raise _refuse(
            "SQL_MULTIPLE_STATEMENTS",
            f"exactly one statement is allowed, got {len(statements)}",
            "send one SELECT per call",
        )
    tree = statements[0]
    root = tree.this if isinstance(tree, exp.Subquery) else tree
    if not isinstance(root, exp.Query) or isinstance(tree, _WRITE_NODES):
        kind = type(tree).__name__.upper()
        raise _refuse(
            "SQL_NOT_READ_ONLY",
            f"only read-only queries (SELECT, WITH, UNION ...) are allowed, got {kind}",
            "the warehouse is read-only; rewrite as a SELECT",
        )
    for node in tree.walk():
        if isinstance(node, _WRITE_NODES):
            raise _refuse(
                "SQL_NOT_READ_ONLY",
                f"the query contains a {type(node).__name__.upper()} clause",
                "the warehouse is read-only; rewrite as a SELECT",
            )
        if isinstance(node, exp.Func):
            name = _function_name(node)
            if name.startswith(FORBIDDEN_FUNCTION_PREFIXES):
                raise _refuse(
                    "SQL_FORBIDDEN_FUNCTION",
                    f"function {name}() is not allowed (file, network or settings access)",
                    "query the warehouse tables only; list them with list_tables",
                )
    cte_names = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    tables: set[str] = set()
    for table in tree.find_all(exp.Table):
        name = table.name
        if not isinstance(table.this, exp.Identifier):
            continue  # a table function such as range(); functions are checked above
        if (
            any(ch in name for ch in "/\\:")
            or "." in name
            or name.lower().endswith((".csv", ".parquet", ".json"))
        ):
            raise _refuse(
                "SQL_FILE_ACCESS",
                f"{name!r} looks like a file path; file access is not allowed",
                "query the warehouse tables only; list them with list_tables",
            )
        if table.catalog or table.db:
            qualified = f"{table.db}.{name}".lower()
        else:
            if name.lower() in cte_names:
                continue
            qualified = name.lower()
        tables.add(qualified)
    return CheckedSql(sql=sql.strip().rstrip(";").strip(), tables=tuple(sorted(tables)))
