"""Generate ``allowlist_postgres.json`` from a PostgreSQL server's ``pg_proc``.

The PostgreSQL twin of :mod:`.generate_allowlist`, with the same policy. Run against a
fresh PostgreSQL of the served major version after an upgrade, review the diff, commit::

    python -m dabench.platform.sqlguard.generate_allowlist_postgres DSN          # rewrite
    python -m dabench.platform.sqlguard.generate_allowlist_postgres DSN --check  # exit 1 if stale

Rules, in order (every excluded name is written to the file with its reason):

1. Callable names are the functions, aggregates and window functions of ``pg_catalog``;
   procedures are denied. The guard does not resolve overloads, so a name is judged over
   all of its overloads.
2. A name with a volatile overload is excluded (``random``, ``nextval``, ``pg_sleep``,
   ``set_config``, ``lo_import``, ``clock_timestamp`` ...), as DuckDB's side-effect/volatile
   rule; so is every type's input/output/send/receive/modifier function. Set-returning
   functions are judged like the others (``jsonb_array_elements``, ``regexp_matches`` in a
   select list); in ``FROM`` the guard allows only :data:`TABLE_FUNCTIONS` (generators).
3. Catalog and internals by type: a name whose every overload takes or returns an object
   identifier or reference type (``oid``, ``regclass``, ``regproc`` ...), ``internal``,
   ``cstring``, a pseudo-type handler, transaction ids, ACLs, ``xml`` or parse trees is
   excluded. (Where some overloads are fine, ``max(oid)`` say, the others cannot be reached:
   the guard refuses casts to such types and the system columns that carry them.)
4. :data:`REVIEWED_DENY` and :data:`DENY_PREFIXES`, the hand review (settings, session
   identity, the catalog, SQL from strings, XML, privilege probes).
5. Aliases: a name with an overload implemented by the same internal or C function
   (``pg_proc.prosrc`` of a plain function in ``internal`` or ``c``) as an overload of a
   name refused by rules 3-4 is refused too (``getpgusername`` is ``current_user``).
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from dabench.platform.sqlguard.allowlist import POSTGRES_ALLOWLIST

TABLE_FUNCTIONS: tuple[str, ...] = ("generate_series", "unnest")
"""The only set-returning functions a query may call (in FROM or a select list)."""

REVIEWED_DENY: dict[str, str] = {
    "current_setting": "reads a setting",
    "current_database": "catalog/session state",
    "current_schema": "catalog/session state",
    "current_schemas": "catalog/session state",
    "current_user": "session identity",
    "current_role": "session identity",
    "session_user": "session identity",
    "user": "session identity",
    "version": "reveals the engine build",
    "inet_client_addr": "session state",
    "inet_client_port": "session state",
    "inet_server_addr": "session state",
    "inet_server_port": "session state",
    "col_description": "reads the catalog",
    "obj_description": "reads the catalog",
    "shobj_description": "reads the catalog",
    "format_type": "reads the catalog",
    "row_security_active": "reads the catalog",
    "ts_stat": "executes SQL given as a string",
    "ts_rewrite": "executes SQL given as a string",
    "query_to_xml": "executes SQL given as a string",
    "query_to_xmlschema": "executes SQL given as a string",
    "query_to_xml_and_xmlschema": "executes SQL given as a string",
    "cursor_to_xml": "reads a cursor",
    "cursor_to_xmlschema": "reads a cursor",
    "get_current_ts_config": "reads a setting",
    "txid_current_if_assigned": "transaction state",
    "txid_current": "transaction state",
    "mxid_age": "transaction state",
}
"""The hand review: name -> why it is refused although PostgreSQL calls it non-volatile."""

DENY_PREFIXES: dict[str, str] = {
    "pg_": "catalog, server or session internals",
    "has_": "privilege probe (reads the catalog)",
    "txid_": "transaction state",
    "to_reg": "catalog lookup by name",
    "xml": "XML (external entities, catalog export)",
    "xpath": "XML",
    "table_to_xml": "reads a table named by a string",
    "schema_to_xml": "reads a schema named by a string",
    "database_to_xml": "reads the whole database",
    "lo_": "large objects",
    "binary_upgrade_": "internal",
    "brin_": "index internals",
    "gin_": "index internals",
    "acl": "ACL internals",
}
ALLOW_DESPITE_PREFIX = frozenset({"pg_typeof", "pg_size_pretty"})
"""As for DuckDB: harmless names with a denied prefix."""

BAD_TYPES: frozenset[str] = frozenset(
    {
        "oid", "regclass", "regproc", "regprocedure", "regoper", "regoperator", "regtype",
        "regdictionary", "regnamespace", "regrole", "regcollation", "internal", "cstring",
        "trigger", "event_trigger", "language_handler", "fdw_handler", "index_am_handler",
        "table_am_handler", "tsm_handler", "xid", "xid8", "cid", "tid", "pg_lsn",
        "pg_snapshot", "txid_snapshot", "aclitem", "pg_node_tree", "pg_ndistinct",
        "pg_dependencies", "pg_mcv_list", "pg_ddl_command", "xml", "refcursor", "void",
        "oidvector", "int2vector", "pg_brin_bloom_summary", "pg_brin_minmax_multi_summary",
    }
)  # fmt: skip
"""Argument or result types that mark a catalog, internal or side-channel function."""

ALLOWLIST_FILE = POSTGRES_ALLOWLIST

_CATALOG_SQL = """
SELECT p.proname, p.prokind, p.provolatile, p.proretset,
       format_type(p.prorettype, NULL) AS rettype,
       ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) AS t) AS argtypes,
       EXISTS (SELECT 1 FROM pg_type ty WHERE p.oid IN (ty.typinput, ty.typoutput,
               ty.typreceive, ty.typsend, ty.typmodin, ty.typmodout, ty.typanalyze,
               ty.typsubscript)) AS type_io,
       CASE WHEN p.prolang IN (12, 13) AND p.prokind = 'f' THEN p.prosrc END AS impl
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'pg_catalog'
ORDER BY p.proname
"""


def _base_type(name: str) -> str:
    return name.removesuffix("[]").split("(")[0].strip().strip('"')


def _reason(row: tuple[Any, ...]) -> str | None:
    """Why one overload excludes its whole name, or ``None``."""
    _name, kind, volatile, _retset, _rettype, _argtypes, type_io = row[:7]
    if kind == "p":
        return "procedure"
    if type_io:
        return "type input/output internals"
    if volatile == "v":
        return "volatile or side effects (pg_proc.provolatile)"
    return None


def _bad_types(row: tuple[Any, ...]) -> list[str]:
    """The catalog/internal types one overload takes or returns."""
    types = [_base_type(str(t)) for t in [row[4], *row[5]]]
    return sorted({t for t in types if t in BAD_TYPES})


def build(dsn: str) -> dict[str, Any]:
    """The allowlist document for the PostgreSQL server at ``dsn``."""
    import psycopg

    with psycopg.connect(dsn) as pg:
        rows = pg.execute(_CATALOG_SQL).fetchall()
        num = int(pg.execute("SHOW server_version_num").fetchone()[0])  # type: ignore[index]
    major = str(num // 10000)  # pg_proc is fixed within a major version
    denied: dict[str, str] = {}
    names: set[str] = set()
    typed: dict[str, list[list[str]]] = {}
    for row in rows:
        name = str(row[0])
        names.add(name)
        reason = _reason(row)
        if reason is not None and name not in denied:
            denied[name] = reason
        typed.setdefault(name, []).append(_bad_types(row))
    for name, overloads in typed.items():
        if all(overloads) and name not in denied:
            bad = sorted({t for o in overloads for t in o})
            denied[name] = f"catalog/internal type ({', '.join(bad)})"
    for name in names:
        prefix = next((p for p in DENY_PREFIXES if name.startswith(p)), None)
        if name in REVIEWED_DENY:
            denied[name] = REVIEWED_DENY[name]
        elif prefix is not None and name not in ALLOW_DESPITE_PREFIX:
            denied.setdefault(name, DENY_PREFIXES[prefix])
    for name in TABLE_FUNCTIONS:
        denied.pop(name, None)
    # rule 5: another name for a refused implementation (internal/C plain functions only:
    # the prosrc of a SQL function is its body, every aggregate's is aggregate_dummy).
    # Rules 3-4 only: a volatile overload says nothing of another function sharing its C
    # entry point with other arguments.
    refused_impl: dict[str, str] = {}
    for row in rows:
        name, impl = str(row[0]), row[7]
        reason = denied.get(name)
        if impl and reason is not None and _reason(row) is None:
            refused_impl.setdefault(str(impl), name)
    for row in rows:
        name, impl = str(row[0]), row[7]
        if impl and name not in denied and str(impl) in refused_impl:
            other = refused_impl[str(impl)]
            denied[name] = f"another name of {other} ({denied[other]})"
    functions = sorted(n for n in names if n not in denied)
    return {
        "postgres_major_version": major,
        "generated_by": "python -m dabench.platform.sqlguard.generate_allowlist_postgres DSN",
        "functions": functions,
        "table_functions": sorted(TABLE_FUNCTIONS),
        "denied": dict(sorted(denied.items())),
    }


def render(data: dict[str, Any]) -> str:
    """The committed file's text."""
    return json.dumps(data, indent=1) + "\n"


def main(argv: list[str]) -> int:
    """``DSN [--check]``."""
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    text = render(build(argv[0]))
    path = Path(str(resources.files("dabench.platform.sqlguard").joinpath(ALLOWLIST_FILE)))
    if "--check" in argv[1:]:
        if path.read_text(encoding="utf-8") != text:
            print(f"{path} is stale for this PostgreSQL: regenerate and review")
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    data = json.loads(text)
    print(f"wrote {path}: {len(data['functions'])} functions, {len(data['denied'])} denied")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
