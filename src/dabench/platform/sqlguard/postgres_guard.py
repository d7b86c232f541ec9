"""The SQL guard in the PostgreSQL dialect: the same policy as DuckDB's, PostgreSQL's parser.

sqlglot (postgres dialect) checks the statement kind, as for DuckDB (see :mod:`.guard`).
Then PostgreSQL's own parser (``pglast``, libpg_query) gives the tree the server will bind,
and every node is checked, failing closed:

- only the node types of a plain query are accepted (no ``SELECT INTO``, ``FOR UPDATE``,
  parameters, XML expressions ...; ``TABLESAMPLE`` only with ``SYSTEM`` or ``BERNOULLI``);
- every function call against the committed ``allowlist_postgres.json`` (unqualified names
  only; :mod:`.generate_allowlist_postgres`), set-returning ones in ``FROM`` against the
  generators ``generate_series`` and ``unnest``;
- session-identity keywords (``current_user``, ``user`` ...) are refused, as the functions;
- casts only to the data types of :data:`ALLOWED_TYPES` (no ``regclass``, ``oid`` ...), no
  system columns (``ctid``, ``xmin`` ...) and no schema-qualified operators;
- every table reference must be a CTE visible at that point (scoped as PostgreSQL scopes
  them, so a CTE cannot shadow a catalog table elsewhere), a world table written
  ``schema.table``, or an ``information_schema`` view (restricted to the world's schemas).

The connection is a read-only role in a read-only session with a ``statement_timeout``
(defence in depth; :mod:`dabench.platform.warehouse.postgres_backend`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from pglast import ast, parse_sql
from pglast.enums import CoercionForm, SQLValueFunctionOp
from pglast.parser import ParseError as PgParseError

from dabench.platform.errors import ToolError
from dabench.platform.sqlguard.allowlist import POSTGRES_ALLOWLIST, load_allowlist

ALLOWED_TYPES: frozenset[str] = frozenset(
    {
        "bool", "boolean", "int2", "int4", "int8", "smallint", "integer", "int", "bigint",
        "numeric", "decimal", "float4", "float8", "real", "float", "double precision",
        "text", "varchar", "bpchar", "char", "character", "character varying", "name",
        "date", "time", "timetz", "timestamp", "timestamptz", "interval", "json", "jsonb",
        "uuid", "bytea", "money", "bit", "varbit", "inet", "cidr", "macaddr",
        "int4range", "int8range", "numrange", "daterange", "tsrange", "tstzrange",
        "tsvector", "tsquery",
    }
)  # fmt: skip
"""Data types a query may cast to (no object-identifier, catalog or pseudo types)."""

SYSTEM_COLUMNS = frozenset({"ctid", "xmin", "xmax", "cmin", "cmax", "tableoid"})
"""Hidden columns of every table: physical location, transaction ids, the table's oid."""

SESSION_VALUE_FUNCTIONS = frozenset(
    {
        SQLValueFunctionOp.SVFOP_CURRENT_ROLE,
        SQLValueFunctionOp.SVFOP_CURRENT_USER,
        SQLValueFunctionOp.SVFOP_USER,
        SQLValueFunctionOp.SVFOP_SESSION_USER,
        SQLValueFunctionOp.SVFOP_CURRENT_CATALOG,
        SQLValueFunctionOp.SVFOP_CURRENT_SCHEMA,
    }
)
"""SQL keywords that read the session's identity or catalog (``SELECT current_user``)."""

_PLAIN_NODES = frozenset(
    {
        "ResTarget", "A_Const", "A_Expr", "A_Star", "A_Indices", "A_Indirection",
        "A_ArrayExpr", "BoolExpr", "CaseExpr", "CaseWhen", "CoalesceExpr", "MinMaxExpr",
        "NullTest", "BooleanTest", "SubLink", "RangeSubselect", "JoinExpr", "Alias",
        "SortBy", "WindowDef", "RowExpr", "GroupingSet", "GroupingFunc", "NamedArgExpr",
        "String", "Integer", "Float", "Boolean", "BitString", "CollateClause",
        "CTESearchClause", "CTECycleClause", "ColumnDef",
    }
)  # fmt: skip
"""Node types with no check of their own (their children are checked)."""

_TABLE_HINT = "query the warehouse tables (schema.table); list them with list_tables"


@dataclass(frozen=True)
class PgTableRef:
    """A base-table reference that is not a visible CTE."""

    catalog: str
    schema: str
    name: str


def _refuse(code: str, message: str, hint: str) -> ToolError:
    return ToolError(code, message, hint)


def postgres_table_refs(sql: str) -> list[PgTableRef]:
    """Check ``sql`` with PostgreSQL's parser (functions, types, nodes, CTE scopes) and
    return its base-table references; raise :class:`ToolError` on anything refused."""
    try:
        statements = parse_sql(sql)
    except PgParseError as exc:
        raise _refuse(
            "SQL_PARSE_ERROR",
            f"PostgreSQL could not parse the SQL: {str(exc)[:300]}",
            "write one PostgreSQL SELECT (or WITH ... SELECT) statement",
        ) from exc
    if len(statements) != 1:
        raise _refuse(
            "SQL_MULTIPLE_STATEMENTS",
            f"exactly one statement is allowed, PostgreSQL sees {len(statements)}",
            "send one SELECT per call",
        )
    stmt = statements[0].stmt
    if not isinstance(stmt, ast.SelectStmt):
        raise _refuse(
            "SQL_NOT_READ_ONLY",
            f"PostgreSQL parses this as {type(stmt).__name__}, not a SELECT",
            "the warehouse is read-only; rewrite as a SELECT",
        )
    walker = _Walker()
    walker.visit(stmt, frozenset())
    return walker.tables


def _slots(node: ast.Node) -> list[str]:
    """A pglast node's attribute names (its class's ``__slots__``)."""
    return list(getattr(type(node), "__slots__", ()))


class _Walker:
    def __init__(self) -> None:
        self.tables: list[PgTableRef] = []
        self.allow = load_allowlist(POSTGRES_ALLOWLIST)

    def visit(self, node: Any, ctes: frozenset[str]) -> None:
        if node is None or isinstance(node, bool | int | float | str | enum.Enum):
            return
        if isinstance(node, list | tuple):
            for child in node:
                self.visit(child, ctes)
            return
        if not isinstance(node, ast.Node):
            raise _refuse("SQL_UNSUPPORTED", "the SQL guard could not analyse this statement",
                          "simplify the query")  # fmt: skip
        kind = type(node).__name__
        handler = getattr(self, f"_{kind}", None)
        if handler is not None:
            handler(node, ctes)
        elif kind in _PLAIN_NODES:
            self._children(node, ctes)
        elif kind in ("IntoClause", "LockingClause"):
            raise _refuse(
                "SQL_NOT_READ_ONLY",
                "SELECT INTO and FOR UPDATE/SHARE write or lock; they are not allowed",
                "the warehouse is read-only; rewrite as a plain SELECT",
            )
        elif kind.startswith("Xml") or kind == "RangeTableFunc":
            raise _refuse(
                "SQL_FUNCTION_NOT_ALLOWED",
                "XML functions and XMLTABLE are not allowed",
                "use the scalar, aggregate and window functions on warehouse tables",
            )
        else:
            raise _refuse(
                "SQL_UNSUPPORTED",
                f"{kind} is not allowed in a query on this platform",
                "simplify the query (plain SELECT ... FROM schema.table)",
            )

    def _children(self, node: ast.Node, ctes: frozenset[str]) -> None:
        for attr in _slots(node):
            self.visit(getattr(node, attr, None), ctes)

    def _SelectStmt(self, node: ast.SelectStmt, ctes: frozenset[str]) -> None:
        if node.intoClause is not None or node.lockingClause:
            self.visit(node.intoClause or node.lockingClause, ctes)
        with_clause = node.withClause
        if with_clause is not None:
            names = [str(c.ctename).lower() for c in with_clause.ctes or ()]
            for i, cte in enumerate(with_clause.ctes or ()):
                # PostgreSQL: a CTE sees the ones before it, and (RECURSIVE) every one
                seen = names if with_clause.recursive else names[:i]
                self._children(cte, ctes | frozenset(seen))
            ctes = ctes | frozenset(names)
        for attr in _slots(node):
            if attr != "withClause":
                self.visit(getattr(node, attr, None), ctes)

    def _CommonTableExpr(self, node: ast.CommonTableExpr, ctes: frozenset[str]) -> None:
        self._children(node, ctes)

    def _RangeVar(self, node: ast.RangeVar, ctes: frozenset[str]) -> None:
        name = str(node.relname).lower()
        if node.schemaname is None and node.catalogname is None and name in ctes:
            return
        self.tables.append(
            PgTableRef(
                catalog=str(node.catalogname or "").lower(),
                schema=str(node.schemaname or "").lower(),
                name=name,
            )
        )
        self.visit(node.alias, ctes)

    def _RangeTableSample(self, node: ast.RangeTableSample, ctes: frozenset[str]) -> None:
        method = ".".join(str(getattr(m, "sval", m)) for m in node.method or ()).lower()
        if method not in ("system", "bernoulli"):
            raise _refuse(
                "SQL_FUNCTION_NOT_ALLOWED",
                f"TABLESAMPLE method {method!r} is not allowed",
                "use TABLESAMPLE SYSTEM (p) or BERNOULLI (p), with REPEATABLE (seed) to repeat",
            )
        self.visit(node.relation, ctes)
        self.visit(node.args, ctes)
        self.visit(node.repeatable, ctes)

    def _RangeFunction(self, node: ast.RangeFunction, ctes: frozenset[str]) -> None:
        for item in node.functions or ():
            call, coldefs = item[0], item[1] if len(item) > 1 else None
            if not isinstance(call, ast.FuncCall):
                raise _refuse("SQL_TABLE_FUNCTION_NOT_ALLOWED", "only generator functions may "
                              "appear in FROM", _TABLE_HINT)  # fmt: skip
            name = self._function_name(call)
            if name not in self.allow.table_functions:
                raise _refuse(
                    "SQL_TABLE_FUNCTION_NOT_ALLOWED",
                    f"table function {name}() is not allowed; only "
                    f"{', '.join(sorted(self.allow.table_functions))} may appear in FROM",
                    _TABLE_HINT,
                )
            self.visit(call.args, ctes)
            self.visit(coldefs, ctes)
        self.visit(node.alias, ctes)
        self.visit(node.coldeflist, ctes)

    def _function_name(self, call: ast.FuncCall) -> str:
        parts = [str(p.sval).lower() for p in call.funcname or ()]
        # SQL syntax (EXTRACT, SUBSTRING ... FROM, TRIM, AT TIME ZONE) arrives qualified
        if (
            len(parts) == 2
            and parts[0] == "pg_catalog"
            and call.funcformat == CoercionForm.COERCE_SQL_SYNTAX
        ):
            return parts[1]
        if len(parts) != 1:
            raise _refuse(
                "SQL_FUNCTION_NOT_ALLOWED",
                f"schema-qualified function call {'.'.join(parts)}() is not allowed",
                "call functions by their plain name",
            )
        return parts[0]

    def _FuncCall(self, node: ast.FuncCall, ctes: frozenset[str]) -> None:
        name = self._function_name(node)
        if name not in self.allow.functions:
            reason = self.allow.denied.get(name, "not a PostgreSQL built-in on the allowlist")
            raise _refuse(
                "SQL_FUNCTION_NOT_ALLOWED",
                f"function {name}() is not allowed ({reason})",
                "use PostgreSQL's scalar, aggregate and window functions on warehouse tables",
            )
        for attr in ("args", "agg_order", "agg_filter", "over"):
            self.visit(getattr(node, attr, None), ctes)

    def _TypeCast(self, node: ast.TypeCast, ctes: frozenset[str]) -> None:
        self._children(node, ctes)

    def _TypeName(self, node: ast.TypeName, ctes: frozenset[str]) -> None:
        parts = [str(p.sval).lower() for p in node.names or ()]
        if parts[:1] == ["pg_catalog"]:
            parts = parts[1:]
        name = parts[0] if len(parts) == 1 else ".".join(parts)
        if name not in ALLOWED_TYPES or node.pct_type or node.setof:
            raise _refuse(
                "SQL_TYPE_NOT_ALLOWED",
                f"type {name} is not allowed in a query (catalog, object-identifier and "
                "pseudo types are refused)",
                "cast to a data type: integer, numeric, text, date, timestamp ...",
            )
        self.visit(node.typmods, ctes)
        self.visit(node.arrayBounds, ctes)

    def _ColumnRef(self, node: ast.ColumnRef, ctes: frozenset[str]) -> None:
        fields = [f for f in node.fields or () if isinstance(f, ast.String)]
        if fields and str(fields[-1].sval).lower() in SYSTEM_COLUMNS:
            raise _refuse(
                "SQL_TABLE_NOT_ALLOWED",
                f"system column {fields[-1].sval} is not readable",
                "select the table's own columns (describe_table lists them)",
            )

    def _SQLValueFunction(self, node: ast.SQLValueFunction, ctes: frozenset[str]) -> None:
        if node.op in SESSION_VALUE_FUNCTIONS:
            word = str(node.op.name).removeprefix("SVFOP_").lower()
            raise _refuse(
                "SQL_FUNCTION_NOT_ALLOWED",
                f"function {word}() is not allowed (session identity)",
                "a column named like a SQL keyword must be written with its table: t.user",
            )

    def _A_Expr(self, node: ast.A_Expr, ctes: frozenset[str]) -> None:
        if node.name is not None and len(node.name) > 1:
            raise _refuse(
                "SQL_FUNCTION_NOT_ALLOWED",
                "schema-qualified operators (OPERATOR(schema.op)) are not allowed",
                "write the operator plainly",
            )
        self._children(node, ctes)
