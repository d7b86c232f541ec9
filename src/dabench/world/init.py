"""``dabench world init``: introspect a warehouse and write a knowledge-directory skeleton.

The skeleton is the format :mod:`dabench.world.source` reads (version 1): ``world.yaml``
pointing at the warehouse, ``catalog.json`` with every table and column (types, primary and
foreign keys as tags, row counts, empty descriptions to fill in), one overview page, and empty
``policies.yaml`` / ``rules.yaml``. Writing is deterministic: the same warehouse gives the
same files.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import yaml

from dabench.defaults import POSTGRES_PREFIXES
from dabench.errors import UserInputError
from dabench.redaction import without_password
from dabench.world.files import CATALOG_FILE, KNOWLEDGE_DIR, POLICIES_FILE, canonical_json
from dabench.world.knowledge import render_page
from dabench.world.model import Catalog, ColumnMeta, DatasetMeta, KnowledgePage, LineageEdge
from dabench.world.offline import OFFLINE_CONFIG
from dabench.world.policy_data import KNOWLEDGE_FORMAT_VERSION
from dabench.world.source import (
    RULES_FILE,
    SOURCE_FILE,
    EngineName,
    WorldSource,
    parquet_views,
    quote_table,
)

UNKNOWN_DATE = dt.date(1970, 1, 1)
"""``last_loaded`` of a table without a date or timestamp column (fill it in)."""

Column = tuple[str, str]
"""(name, type)."""


EXPECTED_SOURCES = (
    "expected a DuckDB file, a directory of <schema>/<table>.parquet files or a postgresql:// DSN"
)
_DUCKDB_MAGIC = (8, b"DUCK")
"""Where a DuckDB database file says what it is (after an 8-byte checksum)."""
_OTHER_FILES = {
    b"SQLite format 3\x00": "a SQLite database (export it to DuckDB or Parquet first)",
    b"PAR1": "a Parquet file (give the directory of <schema>/<table>.parquet files)",
}


def _not_duckdb(path: Path) -> str | None:
    """What ``path`` is when it is not a DuckDB database file, else ``None``."""
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    offset, magic = _DUCKDB_MAGIC
    if head[offset : offset + len(magic)] == magic:
        return None
    for prefix, what in _OTHER_FILES.items():
        if head.startswith(prefix):
            return what
    return "not a DuckDB database file"


def detect_engine(source: str) -> EngineName:
    """``postgres`` for a DSN, ``parquet`` for a directory, ``duckdb`` for a DuckDB file."""
    if source.startswith(POSTGRES_PREFIXES):
        return "postgres"
    path = Path(source)
    if path.is_dir():
        return "parquet"
    if not path.is_file():
        raise UserInputError(f"--from {source!r}: {EXPECTED_SOURCES}")
    found = _not_duckdb(path)
    if found is not None:
        raise UserInputError(f"--from {source!r}: {found}; {EXPECTED_SOURCES}")
    return "duckdb"


def _open_duckdb(source: str) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(source, read_only=True, config=dict(OFFLINE_CONFIG))
    except duckdb.Error as exc:
        raise UserInputError(f"--from {source!r}: cannot open the DuckDB file: {exc}") from exc


def _introspect_duckdb(
    con: duckdb.DuckDBPyConnection,
) -> tuple[dict[str, list[Column]], dict[str, set[str]], list[tuple[str, str, str]]]:
    rows = con.execute(
        "SELECT schema_name, table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE NOT internal AND schema_name NOT IN ('information_schema', 'pg_catalog') "
        "ORDER BY schema_name, table_name, column_index"
    ).fetchall()
    tables: dict[str, list[Column]] = defaultdict(list)
    for schema, table, column, dtype in rows:
        tables[f"{schema}.{table}"].append((str(column), str(dtype)))
    keys: dict[str, set[str]] = defaultdict(set)
    fks: list[tuple[str, str, str]] = []
    for schema, table, ctype, cols, ref_table in con.execute(
        "SELECT schema_name, table_name, constraint_type, constraint_column_names, "
        "referenced_table FROM duckdb_constraints() "
        "WHERE constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')"
    ).fetchall():
        tid = f"{schema}.{table}"
        if ctype == "PRIMARY KEY":
            keys[tid].update(cols)
        elif ref_table:
            fks += [(tid, c, f"{schema}.{ref_table}") for c in cols]
    return dict(tables), dict(keys), fks


def _introspect_postgres(
    dsn: str,
) -> tuple[dict[str, list[Column]], dict[str, set[str]], list[tuple[str, str, str]], Any]:
    import psycopg

    try:
        pg = psycopg.connect(dsn, autocommit=True)
    except psycopg.Error as exc:
        raise UserInputError(f"--from: cannot connect to PostgreSQL: {exc}") from exc
    tables: dict[str, list[Column]] = defaultdict(list)
    for schema, table, column, dtype in pg.execute(
        "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema NOT IN ('information_schema', 'pg_catalog', 'dabench_knowledge') "
        "AND table_schema NOT LIKE 'pg_%' ORDER BY table_schema, table_name, ordinal_position"
    ).fetchall():
        tables[f"{schema}.{table}"].append((str(column), str(dtype).upper()))
    keys: dict[str, set[str]] = defaultdict(set)
    fks: list[tuple[str, str, str]] = []
    for schema, table, column, ctype, ref_schema, ref_table in pg.execute(
        "SELECT tc.table_schema, tc.table_name, kcu.column_name, tc.constraint_type, "
        "ccu.table_schema, ccu.table_name FROM information_schema.table_constraints tc "
        "JOIN information_schema.key_column_usage kcu ON tc.constraint_name = "
        "kcu.constraint_name AND tc.table_schema = kcu.table_schema "
        "JOIN information_schema.constraint_column_usage ccu ON tc.constraint_name = "
        "ccu.constraint_name WHERE tc.constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY') "
        "ORDER BY 1, 2, 3"
    ).fetchall():
        tid = f"{schema}.{table}"
        if ctype == "PRIMARY KEY":
            keys[tid].add(str(column))
        else:
            fks.append((tid, str(column), f"{ref_schema}.{ref_table}"))
    return dict(tables), dict(keys), fks, pg


def _is_date(dtype: str) -> bool:
    return dtype.upper().startswith(("DATE", "TIMESTAMP"))


def _stats(run: Any, tid: str, columns: list[Column]) -> tuple[int, dt.date]:
    dates = [name for name, dtype in columns if _is_date(dtype)]
    parts = ["count(*)"] + [f'max("{d}")::date' for d in dates[:1]]
    row = run(f"SELECT {', '.join(parts)} FROM {quote_table(tid)}")
    last = row[1] if len(row) > 1 and row[1] is not None else UNKNOWN_DATE
    return int(row[0]), last


def introspect(source: str) -> tuple[EngineName, Catalog]:
    """The engine of ``source`` and a catalog skeleton of its tables."""
    engine = detect_engine(source)
    pg: Any = None
    if engine == "postgres":
        tables, keys, fks, pg = _introspect_postgres(source)

        def run(sql: str) -> Any:
            return pg.execute(sql.encode()).fetchone()
    else:
        con = parquet_views(Path(source)) if engine == "parquet" else _open_duckdb(source)
        tables, keys, fks = _introspect_duckdb(con)

        def run(sql: str) -> Any:
            return con.execute(sql).fetchone()

    try:
        if not tables:
            raise UserInputError(f"--from {source!r}: no tables found")
        fk_of = {(t, c): ref for t, c, ref in fks}
        datasets = []
        for tid, columns in sorted(tables.items()):
            rows, last = _stats(run, tid, columns)
            cols = [
                ColumnMeta(
                    name=name,
                    type=dtype,
                    description="",
                    tags=(["primary-key"] if name in keys.get(tid, set()) else [])
                    + ([f"references:{fk_of[(tid, name)]}"] if (tid, name) in fk_of else []),
                )
                for name, dtype in columns
            ]
            schema, _, table = tid.partition(".")
            datasets.append(
                DatasetMeta(
                    id=tid,
                    domain=schema,
                    kind="fact",
                    title=table.replace("_", " "),
                    description="",
                    owner="",
                    columns=cols,
                    row_count=rows,
                    last_loaded=last,
                )
            )
        lineage = sorted(
            {(ref, t) for t, _, ref in fks if ref in tables and ref != t},
        )
        catalog = Catalog(
            datasets=datasets,
            glossary=[],
            curated_queries=[],
            lineage=[
                LineageEdge(upstream=u, downstream=d, transform="foreign key") for u, d in lineage
            ],
        )
    finally:
        if pg is not None:
            pg.close()
        else:
            con.close()
    return engine, catalog


_POLICIES_HEAD = """\
# Policies as data (dabench knowledge format version 1): each policy's scope (the tables
# a truth SQL reads, and optional prompt / SQL regular expressions) and the SQL forms that
# apply it. `dabench tasks validate` requires every truth SQL in scope to apply it.
"""
_RULES_HEAD = """\
# Hidden business rules (the traps): what the data alone does not reveal, where the
# knowledge states it, and the phrase the discoverability check looks for.
"""


def _location(source: str, engine: EngineName) -> str:
    """What ``world.yaml`` records: a DSN without its password (libpq reads it from
    ``PGPASSWORD`` or ``~/.pgpass``), else the absolute path."""
    if engine == "postgres":
        return without_password(source)
    return str(Path(source).resolve())


def init_world(source: str, out: Path, *, force: bool = False) -> Catalog:
    """Introspect ``source`` and write the knowledge skeleton into ``out``."""
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not force)):
        raise UserInputError(f"--out {out}: exists and is not empty (use --force to replace)")
    engine, catalog = introspect(source)
    out.mkdir(parents=True, exist_ok=True)
    spec = WorldSource(engine=engine, location=_location(source, engine))
    data = spec.model_dump(include={"kind", "engine", "location", "knowledge", "format_version"})
    (out / SOURCE_FILE).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    (out / CATALOG_FILE).write_text(canonical_json(catalog), encoding="utf-8")
    pages = out / KNOWLEDGE_DIR
    pages.mkdir(exist_ok=True)
    overview = KnowledgePage(
        id="overview",
        title="Warehouse overview",
        tags=["guide"],
        related_datasets=[d.id for d in catalog.datasets],
        body="# Warehouse overview\n\nDescribe here what the warehouse holds, which tables "
        "to use for reporting, and the rules every analysis must follow.\n",
    )
    (pages / "overview.md").write_text(render_page(overview), encoding="utf-8")
    (out / POLICIES_FILE).write_text(
        _POLICIES_HEAD + f"format_version: {KNOWLEDGE_FORMAT_VERSION}\npolicies: []\n",
        encoding="utf-8",
    )
    (out / RULES_FILE).write_text(
        _RULES_HEAD + f"format_version: {KNOWLEDGE_FORMAT_VERSION}\nrules: []\n",
        encoding="utf-8",
    )
    return catalog
