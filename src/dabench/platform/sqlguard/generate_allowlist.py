"""Generate ``allowlist.json`` from DuckDB's function catalog (``duckdb_functions()``).

Run after a DuckDB upgrade, review the diff by hand, commit::

    python -m dabench.platform.sqlguard.generate_allowlist          # rewrite the file
    python -m dabench.platform.sqlguard.generate_allowlist --check  # exit 1 if stale

Rules, in order (every excluded name is written to the file with its reason):

1. Callable names are the ``scalar``, ``aggregate`` and ``window`` functions and the scalar
   ``macro`` s of a fresh in-memory DuckDB with only its built-in extensions loaded; every
   other name of ``duckdb_functions()`` (table functions, table macros, PRAGMAs) is denied.
2. A function is excluded when DuckDB marks it as having side effects or volatile
   (``random``, ``nextval``, ``sleep_ms``, ``write_log``, ``error`` ...).
3. :data:`REVIEWED_DENY`, the hand review: names that read settings, variables, the session
   or the catalog, turn strings into SQL or name another function, or are internals.
4. A macro is allowed only when its body (parsed by DuckDB) calls allowed functions only,
   unqualified, and references no table; this is iterated to a fixed point. A macro that
   names an aggregate by a constant string (``list_sum`` is ``list_aggr(l, 'sum')``) is
   allowed when that aggregate is.
5. Table functions: exactly :data:`TABLE_FUNCTIONS` (generators).
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import duckdb

from dabench.platform.sqlguard.allowlist import DUCKDB_ALLOWLIST
from dabench.platform.sqlguard.duckdb_tree import PARSER_CONFIG, DuckDBParseError, DuckDBParser

TABLE_FUNCTIONS: tuple[str, ...] = ("generate_series", "range", "unnest")
"""The only table functions a query may call: pure generators."""

EXTRA_FUNCTIONS: dict[str, str] = {
    "unnest": "unnest() in a select list (DuckDB lists it as a table function only)",
}
"""Callable names that are not in the catalog as scalar functions but are pure."""

NAMES_A_FUNCTION: frozenset[str] = frozenset(
    {"aggregate", "array_aggr", "array_aggregate", "list_aggr", "list_aggregate"}
)
"""Functions whose string argument names an aggregate function to call."""

REVIEWED_DENY: dict[str, str] = {
    # settings, variables, environment, session
    "current_setting": "reads a setting",
    "getvariable": "reads a session variable",
    "getenv": "reads the environment",
    "current_database": "catalog/session state",
    "current_catalog": "catalog/session state",
    "current_schema": "catalog/session state",
    "current_schemas": "catalog/session state",
    "in_search_path": "catalog/session state",
    "txid_current": "transaction state",
    "version": "reveals the engine build",
    "current_user": "session identity",
    "current_role": "session identity",
    "session_user": "session identity",
    "user": "session identity",
    # SQL from strings, functions by name
    "json_serialize_sql": "turns a string into a SQL parse tree",
    "json_deserialize_sql": "turns a parse tree into SQL",
    "json_serialize_plan": "plans arbitrary SQL given as a string",
    "json_execute_serialized_sql": "executes SQL given as a string",
    "query": "executes SQL given as a string",
    "query_table": "reads a table named by a string",
    "list_aggr": "names another function by a string",
    "list_aggregate": "names another function by a string",
    "array_aggr": "names another function by a string",
    "array_aggregate": "names another function by a string",
    "aggregate": "names another function by a string",
    "to_aggregate_state": "names another function by a string",
    "finalize": "aggregate-state internals",
    "combine": "aggregate-state internals",
    "combine_aggr": "aggregate-state internals",
    "index_key": "names a table and an index",
    "parse_duckdb_log_message": "log internals",
    # internals and postgres-compatibility catalog shims
    "__cast": "internal",
    "__between": "internal",
    "col_description": "postgres catalog shim",
    "obj_description": "postgres catalog shim",
    "shobj_description": "postgres catalog shim",
    "format_type": "postgres catalog shim (reads the catalog)",
    "format_pg_type": "postgres catalog shim",
    "map_to_pg_oid": "postgres catalog shim",
    "map_type_id_to_pg_oid": "postgres catalog shim",
    "inet_client_addr": "postgres session shim",
    "inet_client_port": "postgres session shim",
    "inet_server_addr": "postgres session shim",
    "inet_server_port": "postgres session shim",
    "get_block_size": "reads pragma_database_size",
}
"""The hand review: name -> why it is refused although DuckDB calls it pure."""

_DENY_PREFIXES: dict[str, str] = {
    "__internal": "internal",
    "has_": "postgres privilege shim",
    "pg_": "postgres catalog shim",
}
_ALLOW_DESPITE_PREFIX = frozenset({"pg_typeof", "pg_size_pretty"})

_OTHER_KINDS = {
    "pragma": "PRAGMA function",
    "table": "table function (only generators are allowed)",
    "table_macro": "table macro",
}

ALLOWLIST_FILE = DUCKDB_ALLOWLIST


def _catalog(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, bool, str, str]]:
    rows = con.execute(
        "SELECT lower(function_name), function_type, coalesce(has_side_effects, false), "
        "coalesce(stability, ''), coalesce(macro_definition, '') FROM duckdb_functions() "
        "ORDER BY ALL"
    ).fetchall()
    return [(str(a), str(b), bool(c), str(d), str(e)) for a, b, c, d, e in rows]


def _named_aggregates_ok(node: Any, allowed: set[str]) -> bool:
    """In a macro body, every function-naming call names an allowed aggregate literally."""
    if isinstance(node, list):
        return all(_named_aggregates_ok(n, allowed) for n in node)
    if not isinstance(node, dict):
        return True
    if node.get("class") == "FUNCTION" and node.get("function_name") in NAMES_A_FUNCTION:
        args = node.get("arguments", [])
        if len(args) < 2:
            return False
        named = args[1].get("expression", {})
        literal = named.get("literal", {}) if named.get("class") == "CONSTANT" else {}
        if literal.get("kind") != "STRING" or str(literal.get("text")).lower() not in allowed:
            return False
    return all(_named_aggregates_ok(v, allowed) for v in node.values())


def generate() -> dict[str, Any]:
    """The allowlist for the installed DuckDB, as the JSON-ready dictionary."""
    con = duckdb.connect(":memory:", config=dict(PARSER_CONFIG))
    parser = DuckDBParser()
    rows = _catalog(con)
    denied: dict[str, str] = {}
    types: dict[str, set[str]] = {}
    macros: dict[str, list[str]] = {}
    for name, ftype, side_effects, stability, definition in rows:
        types.setdefault(name, set()).add(ftype)
        if ftype == "macro":
            macros.setdefault(name, []).append(definition)
        if side_effects or stability == "VOLATILE":
            denied.setdefault(name, "side effects or volatile (duckdb_functions)")
    for name in types:
        if name in REVIEWED_DENY:
            denied[name] = REVIEWED_DENY[name]
        for prefix, reason in _DENY_PREFIXES.items():
            if name.startswith(prefix) and name not in _ALLOW_DESPITE_PREFIX:
                denied.setdefault(name, reason)
    callable_types = {"scalar", "aggregate", "window"}
    allowed = {
        n for n, t in types.items() if t & callable_types and "macro" not in t and n not in denied
    }
    allowed |= set(EXTRA_FUNCTIONS)
    aggregates = {n for n, t in types.items() if "aggregate" in t and n not in denied}
    pending = {n for n in macros if n not in denied}
    progress = True
    while progress:
        progress = False
        for name in sorted(pending):
            if _macro_ok(parser, macros[name], allowed | {name}, aggregates):
                allowed.add(name)
                pending.discard(name)
                progress = True
    for name in pending:
        denied[name] = "macro body calls a refused function or reads a table"
    for name, t in types.items():
        if name not in allowed and name not in denied:
            denied[name] = _OTHER_KINDS.get(min(t), "not a scalar, aggregate or window function")
    missing = [f for f in TABLE_FUNCTIONS if "table" not in types.get(f, set())]
    if missing:
        raise RuntimeError(f"table functions {missing} are not in this DuckDB's catalog")
    for name in TABLE_FUNCTIONS:
        denied.pop(name, None)
    return {
        "duckdb_version": duckdb.__version__,
        "generated_by": "python -m dabench.platform.sqlguard.generate_allowlist",
        "functions": sorted(allowed),
        "table_functions": sorted(TABLE_FUNCTIONS),
        "denied": dict(sorted(denied.items())),
    }


def _macro_ok(
    parser: DuckDBParser, definitions: list[str], allowed: set[str], aggregates: set[str]
) -> bool:
    for body in definitions:
        try:
            tree = parser.tree(f"SELECT {body}")
        except DuckDBParseError:
            return False
        refs = parser.refs(f"SELECT {body}")
        if refs.tables or refs.other_refs:
            return False
        for fn in refs.functions:
            if fn.qualified or fn.kind == "table":
                return False
            if fn.name in NAMES_A_FUNCTION:
                continue
            if fn.name not in allowed:
                return False
        if not _named_aggregates_ok(tree, aggregates):
            return False
    return True


def render(data: dict[str, Any]) -> str:
    """The file's text: stable JSON, one name per line."""
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def allowlist_path() -> Path:
    """Where the committed allowlist lives (inside the package)."""
    return Path(str(resources.files("dabench.platform.sqlguard").joinpath(ALLOWLIST_FILE)))


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) the committed allowlist; returns the exit code."""
    args = sys.argv[1:] if argv is None else argv
    text = render(generate())
    path = allowlist_path()
    if "--check" in args:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is stale for DuckDB {duckdb.__version__}: regenerate and review")
            return 1
        print(f"{path} is up to date")
        return 0
    path.write_text(text, encoding="utf-8")
    data = json.loads(text)
    print(
        f"wrote {path}: {len(data['functions'])} functions, "
        f"{len(data['table_functions'])} table functions, {len(data['denied'])} denied "
        f"(DuckDB {data['duckdb_version']})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
