"""DuckDB's own parse tree of a statement, and every function and table reference in it.

The guard asks DuckDB's parser (``json_serialize_sql`` on a private in-memory connection
that holds no data and cannot reach files) for the tree DuckDB itself would bind, so the
names checked against the allowlist are exactly the names DuckDB will resolve: no mapping
from another parser's node types, no disagreement about what a string means.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

import duckdb

from dabench.world.offline import OFFLINE_CONFIG

PARSER_CONFIG: dict[str, Any] = {**OFFLINE_CONFIG, "lock_configuration": True, "threads": 1}
"""The parser connection: offline, one thread, settings locked."""


class DuckDBParseError(Exception):
    """DuckDB could not serialize the statement (a parse error, or not a SELECT)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        """DuckDB's error type, e.g. ``parser`` or ``not implemented``."""


@dataclass(frozen=True)
class FunctionRef:
    """A function call in the tree."""

    name: str
    """Lower-cased name as written (DuckDB resolves it by this name)."""
    kind: str
    """``scalar`` (scalar, aggregate or macro call), ``window`` or ``table``."""
    qualified: bool
    """Written with a schema or catalog (``main.upper(x)``)."""


@dataclass(frozen=True)
class TableRef:
    """A base-table reference that is not a visible CTE."""

    catalog: str
    schema: str
    name: str


@dataclass
class TreeRefs:
    """What a parsed statement references."""

    statements: int = 0
    functions: list[FunctionRef] = field(default_factory=list)
    tables: list[TableRef] = field(default_factory=list)
    other_refs: list[str] = field(default_factory=list)
    """Refused table-reference types (e.g. ``SHOW_REF`` from DESCRIBE/SUMMARIZE/SHOW)."""


_UNSAFE_REF_TYPES = frozenset(
    {"SHOW_REF", "COLUMN_DATA", "DELIM_GET", "BOUND_TABLE_REF", "CTE", "INVALID"}
)
"""Table-reference types (nodes without an expression ``class``) the guard refuses."""


SQL_VALUE_FUNCTIONS: dict[str, str] = {
    "current_catalog": "current_catalog",
    "current_date": "current_date",
    "current_role": "current_role",
    "current_schema": "current_schema",
    "current_time": "get_current_time",
    "current_timestamp": "get_current_timestamp",
    "current_user": "current_user",
    "localtime": "current_localtime",
    "localtimestamp": "current_localtimestamp",
    "session_user": "session_user",
    "user": "user",
}
"""Bare words DuckDB's binder turns into function calls when no column has that name
(``SELECT current_user``) -> the function it calls."""


class DuckDBParser:
    """Serializes SQL with DuckDB's parser; safe to share between threads."""

    def __init__(self) -> None:
        self._con = duckdb.connect(":memory:", config=dict(PARSER_CONFIG))
        self._lock = threading.Lock()
        self._local = threading.local()

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor (creating one per call costs about as much as the parse)."""
        cur: duckdb.DuckDBPyConnection | None = getattr(self._local, "cursor", None)
        if cur is None:
            with self._lock:
                cur = self._con.cursor()
            self._local.cursor = cur
        return cur

    def tree(self, sql: str) -> dict[str, Any]:
        """DuckDB's JSON parse tree of ``sql``; raises :class:`DuckDBParseError`."""
        try:
            row = self._cursor().execute("SELECT json_serialize_sql($1::VARCHAR)", [sql]).fetchone()
        except duckdb.Error as exc:
            raise DuckDBParseError("error", str(exc).splitlines()[0][:300]) from exc
        data = json.loads(row[0]) if row is not None else {}
        if not isinstance(data, dict):
            raise DuckDBParseError("error", "unexpected parser output")
        if data.get("error"):
            raise DuckDBParseError(
                str(data.get("error_type", "")), str(data.get("error_message", ""))[:300]
            )
        return data

    def refs(self, sql: str) -> TreeRefs:
        """Every function call and non-CTE table reference of ``sql``."""
        return collect_refs(self.tree(sql))


def collect_refs(tree: dict[str, Any]) -> TreeRefs:
    """Walk a ``json_serialize_sql`` tree, resolving CTE names by scope."""
    out = TreeRefs()
    statements = tree.get("statements", [])
    out.statements = len(statements)
    _walk(statements, frozenset(), out)
    return out


def _walk(node: Any, ctes: frozenset[str], out: TreeRefs) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, ctes, out)
        return
    if not isinstance(node, dict):
        return
    cte_map = node.get("cte_map")
    if isinstance(cte_map, dict) and cte_map.get("map"):
        ctes = _walk_ctes(cte_map["map"], ctes, out)
    kind = node.get("class")
    if kind in ("FUNCTION", "WINDOW"):
        out.functions.append(_function_ref(node, "scalar" if kind == "FUNCTION" else "window"))
    if kind == "COLUMN_REF":
        names = node.get("column_names") or []
        if len(names) == 1 and str(names[0]).lower() in SQL_VALUE_FUNCTIONS:
            name = SQL_VALUE_FUNCTIONS[str(names[0]).lower()]
            out.functions.append(FunctionRef(name=name, kind="scalar", qualified=False))
    ref_type = node.get("type")
    if ref_type == "TABLE_FUNCTION" and isinstance(node.get("function"), dict):
        fn = node["function"]
        out.functions.append(_function_ref(fn, "table"))
        for key, value in node.items():
            if key != "function":
                _walk(value, ctes, out)
        _walk(fn.get("arguments", []), ctes, out)
        for key in ("filter", "order_bys"):
            _walk(fn.get(key), ctes, out)
        return
    if ref_type == "BASE_TABLE" and "table_name" in node:
        catalog = str(node.get("catalog_name") or "").lower()
        schema = str(node.get("schema_name") or "").lower()
        name = str(node.get("table_name") or "")
        if catalog or schema or name.lower() not in ctes:
            out.tables.append(TableRef(catalog, schema, name))
    if "class" not in node and isinstance(ref_type, str) and ref_type in _UNSAFE_REF_TYPES:
        out.other_refs.append(str(ref_type))
    for key, value in node.items():
        if key != "cte_map":
            _walk(value, ctes, out)


def _walk_ctes(entries: list[Any], ctes: frozenset[str], out: TreeRefs) -> frozenset[str]:
    """Walk CTE bodies: each sees the CTEs before it (and itself when recursive)."""
    visible = set(ctes)
    for entry in entries:
        key = str(entry.get("key", "")).lower()
        value = entry.get("value", {})
        body = value.get("query_node", {}) if isinstance(value, dict) else {}
        recursive = isinstance(body, dict) and body.get("type") == "RECURSIVE_CTE_NODE"
        _walk(value, frozenset(visible | ({key} if recursive else set())), out)
        visible.add(key)
    return frozenset(visible)


def _function_ref(node: dict[str, Any], kind: str) -> FunctionRef:
    name = str(node.get("function_name", "")).lower()
    path = (node.get("qualified_name") or {}).get("path") or [name]
    qualified = bool(node.get("schema") or node.get("catalog")) or len(path) > 1
    return FunctionRef(name=name, kind=kind, qualified=qualified)
