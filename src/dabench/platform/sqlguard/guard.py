"""The read-only SQL guard: one SELECT, allowlisted functions, the warehouse's tables only.

Two parsers must both accept a statement. sqlglot (DuckDB dialect) checks the statement
kind: exactly one query, no DDL/DML/COPY/ATTACH/PRAGMA/SET node anywhere. DuckDB's own
parser (:mod:`.duckdb_tree`) then gives the function and table names DuckDB will bind,
and each is checked against an allowlist:

- every function call against the committed :mod:`.allowlist` (unqualified names only);
- table functions against the generators ``range``, ``generate_series``, ``unnest``;
- every table reference must be a visible CTE, a warehouse table, or one of the
  ``information_schema`` views, which are rewritten to rows of the warehouse's schemas.

So no string becomes a table (no replacement scans of files), no function reads a file,
setting, variable or catalog, and nothing names another function. The guard fails closed:
what it cannot parse is refused. The warehouse connection is read-only, offline and locked
as well (defence in depth).

A scope in the ``postgres`` dialect is checked by the same steps with sqlglot's postgres
dialect and PostgreSQL's own parser (:mod:`.postgres_guard`), under the same policy.
"""

from __future__ import annotations

import difflib
import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from dabench.platform.errors import ToolError
from dabench.platform.sqlguard.allowlist import load_allowlist
from dabench.platform.sqlguard.duckdb_tree import DuckDBParseError, DuckDBParser, TreeRefs
from dabench.platform.sqlguard.scope import SqlScope

logging.getLogger("sqlglot").setLevel(logging.ERROR)
_log = logging.getLogger(__name__)

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

INFORMATION_SCHEMA_VIEWS: dict[str, tuple[str, str]] = {
    "schemata": ("catalog_name", "schema_name"),
    "tables": ("table_catalog", "table_schema"),
    "columns": ("table_catalog", "table_schema"),
    "views": ("table_catalog", "table_schema"),
    "table_constraints": ("table_catalog", "table_schema"),
    "key_column_usage": ("table_catalog", "table_schema"),
    "constraint_column_usage": ("table_catalog", "table_schema"),
    "constraint_table_usage": ("table_catalog", "table_schema"),
    "check_constraints": ("constraint_catalog", "constraint_schema"),
    "referential_constraints": ("constraint_catalog", "constraint_schema"),
}
"""The readable ``information_schema`` views -> their (catalog, schema) columns, by which
each reference is restricted to the warehouse's own schemas."""

_FILE_CHARS = frozenset("/\\:.*~?$")
_TABLE_HINT = "query the warehouse tables (schema.table); list them with list_tables"


@dataclass(frozen=True)
class CheckedSql:
    """A statement the guard accepted and the tables it references."""

    sql: str
    """The SQL to execute (the input with trailing semicolons removed; ``information_schema``
    references rewritten to the warehouse's schemas)."""
    tables: tuple[str, ...]
    """Referenced warehouse ``schema.table`` names (CTE names excluded), sorted, unique."""


def _refuse(code: str, message: str, hint: str) -> ToolError:
    return ToolError(code, message, hint)


def check_sql(sql: str, max_chars: int, scope: SqlScope) -> CheckedSql:
    """Accept one read-only query over ``scope`` or raise :class:`ToolError` with a specific
    code. Verdicts of recent statements are cached (repeated queries are common)."""
    if len(sql) > max_chars:
        raise _refuse(
            "SQL_TOO_LONG",
            f"the SQL is {len(sql)} characters; the limit is {max_chars}",
            "shorten the query",
        )
    if len(sql) <= _CACHE_MAX_CHARS:
        verdict = _cached_check(sql, scope)
    else:
        verdict = _guarded_check(sql, scope)
    if isinstance(verdict, ToolError):
        raise ToolError(verdict.code, verdict.body.message, verdict.body.hint)
    return verdict


_CACHE_MAX_CHARS = 4000


def _guarded_check(sql: str, scope: SqlScope) -> CheckedSql | ToolError:
    try:
        return _check(sql, scope)
    except ToolError as exc:
        return exc
    except RecursionError:
        return _refuse(
            "SQL_PARSE_ERROR", "the SQL is nested too deeply to parse", "flatten the query"
        )
    except Exception:  # fail closed: a statement the guard cannot analyse is not run
        _log.exception("the SQL guard could not analyse a statement")
        return _refuse(
            "SQL_UNSUPPORTED",
            "the SQL guard could not analyse this statement",
            "simplify the query (plain SELECT ... FROM schema.table)",
        )


_cached_check = functools.lru_cache(maxsize=1024)(_guarded_check)


@functools.cache
def _parser() -> DuckDBParser:
    return DuckDBParser()


class _TableRef(Protocol):
    @property
    def catalog(self) -> str: ...
    @property
    def schema(self) -> str: ...
    @property
    def name(self) -> str: ...


def _check(sql: str, scope: SqlScope) -> CheckedSql:
    tree = _check_statement(sql, scope.dialect)
    text = sql.strip().rstrip(";").strip()
    if scope.dialect == "postgres":
        return _check_postgres(tree, text, scope)
    refs = _duckdb_refs(text)
    _check_functions(refs)
    tables, info_refs = _check_tables(refs.tables, scope)
    if info_refs:
        text = _restrict_information_schema(tree, info_refs, scope)
        rewritten = _duckdb_refs(text)
        _check_functions(rewritten)
        _check_tables(rewritten.tables, scope)
    return CheckedSql(sql=text, tables=tuple(sorted(tables)))


def _check_postgres(tree: exp.Expr, text: str, scope: SqlScope) -> CheckedSql:
    """PostgreSQL's parser: functions, types and node kinds, then the tables."""
    from dabench.platform.sqlguard.postgres_guard import postgres_table_refs  # pglast: extra

    tables, info_refs = _check_tables(postgres_table_refs(text), scope)
    if info_refs:
        text = _restrict_information_schema(tree, info_refs, scope)
        _check_tables(postgres_table_refs(text), scope)
    return CheckedSql(sql=text, tables=tuple(sorted(tables)))


def _check_statement(sql: str, dialect: str = "duckdb") -> exp.Expr:
    """sqlglot: exactly one statement, a query, no write/settings node anywhere."""
    if "\x00" in sql:
        raise _refuse("SQL_PARSE_ERROR", "the SQL contains a NUL character", "remove it")
    if not sql.strip().strip(";").strip():
        raise _refuse("SQL_EMPTY", "no SQL statement given", "pass one SELECT statement")
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except (ParseError, TokenError) as exc:
        _refuse_unparsed(sql, dialect)
        engine = "DuckDB" if dialect == "duckdb" else "PostgreSQL"
        raise _refuse(
            "SQL_PARSE_ERROR",
            f"the SQL could not be parsed: {_sqlglot_message(exc)}",
            f"write one {engine} SELECT (or WITH ... SELECT) statement",
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
        # a typo sqlglot reads as an expression (SELEC x: an alias) is a parse error, and
        # the engine's own parser says where
        if not isinstance(tree, _WRITE_NODES):
            _refuse_unparsed(sql, dialect)
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
    return tree


def _not_a_select(exc: DuckDBParseError) -> ToolError | None:
    """``SQL_NOT_READ_ONLY`` when DuckDB's parser saw a statement other than a SELECT."""
    if "Only SELECT" not in str(exc):
        return None
    return _refuse(
        "SQL_NOT_READ_ONLY",
        "DuckDB parses this as a statement other than a SELECT",
        "the warehouse is read-only; rewrite as a SELECT",
    )


def _refuse_unparsed(sql: str, dialect: str) -> None:
    """A statement sqlglot cannot parse (or reads as no query) asked of the engine's own
    parser, which parses without running anything: ``SQL_NOT_READ_ONLY`` when it is a
    statement other than a SELECT (EXPORT DATABASE ...), ``SQL_PARSE_ERROR`` with the
    engine's message (``syntax error at or near "SELEC"``) when it does not parse. Returns
    when the engine parses it as a SELECT."""
    if dialect != "duckdb":  # PostgreSQL's parser names a non-SELECT and a syntax error
        from dabench.platform.sqlguard.postgres_guard import postgres_table_refs

        postgres_table_refs(sql)
        return
    try:
        _parser().tree(sql)
    except DuckDBParseError as exc:
        if (refusal := _not_a_select(exc)) is not None:
            raise refusal from exc
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        if exc.kind.lower() == "parser" and first.startswith("syntax error"):
            raise _refuse(
                "SQL_PARSE_ERROR",
                f"the SQL could not be parsed: {first}",
                "write one DuckDB SELECT (or WITH ... SELECT) statement",
            ) from exc


def _sqlglot_message(exc: ParseError | TokenError) -> str:
    """sqlglot's complaint without its internals (``missing for <class 'sqlglot...Mul'>``):
    where it stopped and the text there."""
    errors = getattr(exc, "errors", None) or []
    if errors and errors[0].get("line") is not None:
        err = errors[0]
        near = str(err.get("highlight") or "").strip()[:60]
        where = f"unexpected or incomplete SQL at line {err['line']}, column {err['col']}"
        return f"{where} (near {near!r})" if near else where
    first = (str(exc).splitlines() or [""])[0]
    return re.sub(r" for <class '[\w.]+'>", "", first)[:300]


def _duckdb_refs(sql: str) -> TreeRefs:
    try:
        refs = _parser().refs(sql)
    except DuckDBParseError as exc:
        if (refusal := _not_a_select(exc)) is not None:
            raise refusal from exc
        raise _refuse(
            "SQL_PARSE_ERROR",
            f"DuckDB could not parse the SQL: {exc}",
            "write one DuckDB SELECT (or WITH ... SELECT) statement",
        ) from exc
    if refs.statements != 1:
        raise _refuse(
            "SQL_MULTIPLE_STATEMENTS",
            f"exactly one statement is allowed, DuckDB sees {refs.statements}",
            "send one SELECT per call",
        )
    if refs.other_refs:
        raise _refuse(
            "SQL_TABLE_NOT_ALLOWED",
            f"{refs.other_refs[0].replace('_REF', '')} (DESCRIBE, SUMMARIZE, SHOW) is not allowed",
            "use describe_table and list_tables, or SELECT from the table",
        )
    return refs


def _check_functions(refs: TreeRefs) -> None:
    allow = load_allowlist()
    for fn in refs.functions:
        if fn.kind == "table":
            if fn.qualified or fn.name not in allow.table_functions:
                raise _refuse(
                    "SQL_TABLE_FUNCTION_NOT_ALLOWED",
                    f"table function {fn.name}() is not allowed; only "
                    f"{', '.join(sorted(allow.table_functions))} may appear in FROM",
                    _TABLE_HINT,
                )
            continue
        if fn.qualified:
            raise _refuse(
                "SQL_FUNCTION_NOT_ALLOWED",
                f"schema-qualified function call {fn.name}() is not allowed",
                "call functions by their plain name",
            )
        if fn.name not in allow.functions:
            reason = allow.denied.get(fn.name, "not a DuckDB built-in on the allowlist")
            raise _refuse(
                "SQL_FUNCTION_NOT_ALLOWED",
                f"function {fn.name}() is not allowed ({reason})",
                "use DuckDB's scalar, aggregate and window functions on warehouse tables "
                "(a column named like a SQL keyword function, e.g. user, must be written "
                "with its table: t.user)",
            )


def _check_tables(refs: Iterable[_TableRef], scope: SqlScope) -> tuple[set[str], int]:
    """The warehouse tables referenced and the number of information_schema references."""
    tables: set[str] = set()
    info_refs = 0
    for ref in refs:
        name = ref.name.lower()
        qualified = f"{ref.schema}.{name}" if ref.schema else f"main.{name}"
        if ref.catalog and ref.catalog != scope.catalog.lower():
            raise _refuse(
                "SQL_TABLE_NOT_ALLOWED",
                f"database {ref.catalog!r} is not readable; only the warehouse is",
                _TABLE_HINT,
            )
        if ref.schema == "information_schema" and name in INFORMATION_SCHEMA_VIEWS:
            info_refs += 1
        elif qualified in scope.tables:
            tables.add(qualified)
        elif not ref.schema and any(ch in _FILE_CHARS for ch in ref.name):
            raise _refuse(
                "SQL_FILE_ACCESS",
                f"{ref.name!r} looks like a file path; file access is not allowed",
                _TABLE_HINT,
            )
        elif ref.schema in scope.schemas:
            close = difflib.get_close_matches(qualified, sorted(scope.tables), n=3)
            raise _refuse(
                "TABLE_NOT_FOUND",
                f"no table {qualified} in the warehouse",
                f"did you mean {', '.join(close)}?" if close else "list_tables shows every table",
            )
        else:
            shown = f"{ref.schema}.{ref.name}" if ref.schema else ref.name
            close = difflib.get_close_matches(name, sorted(scope.tables), n=3, cutoff=0.5)
            raise _refuse(
                "SQL_TABLE_NOT_ALLOWED",
                f"{shown!r} is not a warehouse table; system catalogs, files and other "
                "databases are not readable (information_schema views are)",
                f"did you mean {', '.join(close)}?" if close else _TABLE_HINT,
            )
    return tables, info_refs


OWNERLESS_COLUMNS: dict[tuple[str, str], str] = {
    ("postgres", "schemata"): (
        "catalog_name, schema_name, CAST(NULL AS TEXT) AS schema_owner, "
        "default_character_set_catalog, default_character_set_schema, "
        "default_character_set_name, sql_path"
    ),
}
"""Views whose owner column would name a server role (the PostgreSQL administrator who
exported the world): the restricted view lists the columns with the owner as ``NULL``."""


def _restrict_information_schema(tree: exp.Expr, expected: int, scope: SqlScope) -> str:
    """Replace every ``information_schema.<view>`` by its rows of the warehouse's schemas."""
    schemas = ", ".join(f"'{s}'" for s in sorted(scope.schemas))
    catalog = scope.catalog.replace("'", "''")
    found = 0

    def replace(node: exp.Expr) -> exp.Expr:
        nonlocal found
        if not (
            isinstance(node, exp.Table)
            and node.db.lower() == "information_schema"
            and node.name.lower() in INFORMATION_SCHEMA_VIEWS
            and not node.catalog
        ):
            return node
        found += 1
        view = node.name.lower()
        cat_col, schema_col = INFORMATION_SCHEMA_VIEWS[view]
        columns = OWNERLESS_COLUMNS.get((scope.dialect, view), "*")
        inner = sqlglot.parse_one(
            f"SELECT {columns} FROM information_schema.{view} "
            f"WHERE {cat_col} = '{catalog}' AND {schema_col} IN ({schemas})",
            read=scope.dialect,
        )
        alias = node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(view))
        return exp.Subquery(this=inner, alias=alias.copy())

    rewritten = tree.copy().transform(replace)
    if found != expected:
        raise _refuse(
            "SQL_TABLE_NOT_ALLOWED",
            "an information_schema reference could not be restricted to the warehouse",
            "select from information_schema.<view> directly, in a plain FROM clause",
        )
    return rewritten.sql(dialect=scope.dialect)
