"""Export a built world to one SQLite file (``dabench world export --sqlite FILE``).

SQLite has no schemas, so every table is flattened into the one database as
``<schema>__<table>`` (``sales.orders`` -> ``sales__orders``; two underscores, which no world
schema or table name contains). One file, no ``ATTACH``, because the common SQLite MCP servers
open exactly one file and refuse anything but ``SELECT``. The oracle and ``dabench tasks
validate --warehouse FILE.sqlite`` send the truth SQL translated to SQLite with the same
flattening (:func:`dabench.tasks.engines.to_sqlite`), and ``exec_sql`` grading maps an answer's
``sales__orders`` back to ``sales.orders`` before running it on the world's DuckDB.

Types (SQLite stores values, not column types): integers as ``INTEGER``, ``DOUBLE`` and
``DECIMAL`` as ``REAL`` (exact decimals become doubles), ``BOOLEAN`` as 0/1 in a ``BOOLEAN``
column, ``DATE`` as ISO text ``YYYY-MM-DD``, ``TIMESTAMP`` as ``YYYY-MM-DD HH:MM:SS[.ffffff]``
(SQLite's own date functions read both), text as ``TEXT``. A first column named ``*_id``
that is unique and non-null is the ``PRIMARY KEY``. The catalog's table and column
descriptions ride along as SQL comments in each ``CREATE TABLE`` (``sqlite_master.sql``
keeps them). Catalog, world manifest and knowledge pages go to ``<file>.world/`` beside the
file, as for ``--duckdb``. The file is written under a temporary name and renamed into place.
"""

from __future__ import annotations

import datetime as dt
import decimal
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from dabench.world.export_sql import (
    COPY_BATCH,
    ProgressFn,
    SqlExportError,
    SqlExportSummary,
    TableExport,
    _column_types,
    _comment,
    _ident,
    _qualified,
    primary_key,
    staged_file_export,
)
from dabench.world.load import World
from dabench.world.model import DatasetMeta
from dabench.world.warehouse import connect_warehouse

SEPARATOR = "__"
"""Between schema and table in a flattened SQLite table name."""


def sqlite_table(dataset_id: str) -> str:
    """The flattened SQLite name of a dataset: ``sales.orders`` -> ``sales__orders``."""
    schema, table = dataset_id.split(".", 1)
    return f"{schema}{SEPARATOR}{table}"


def sqlite_type(duckdb_type: str) -> str:
    """The declared SQLite type of a DuckDB column type."""
    t = duckdb_type.upper().strip()
    if t in ("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "HUGEINT", "UBIGINT", "UINTEGER"):
        return "INTEGER"
    if t in ("DOUBLE", "FLOAT", "REAL") or t.startswith(("DECIMAL", "NUMERIC")):
        return "REAL"
    if t in ("BOOLEAN", "DATE", "TIMESTAMP"):
        return t
    if t in ("VARCHAR", "UUID", "TIME"):
        return "TEXT"
    raise SqlExportError(f"no SQLite type for DuckDB type {duckdb_type!r}")


def _value(value: Any) -> Any:
    """A DuckDB value as SQLite stores it (see the module docstring)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return value


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _create(ds: DatasetMeta, columns: list[tuple[str, str]], pk: str | None) -> str:
    described = {c.name: c for c in ds.columns}
    lines = []
    for i, (name, type_) in enumerate(columns):
        key = " PRIMARY KEY" if name == pk else ""
        comma = "," if i < len(columns) - 1 else ""
        meta = described.get(name)
        note = ""
        if meta is not None:
            note = meta.description + (f" Unit: {meta.unit}." if meta.unit else "")
            note = f"  -- {_one_line(note)}"
        lines.append(f"  {_ident(name)} {sqlite_type(type_)}{key}{comma}{note}")
    head = f"CREATE TABLE {_ident(sqlite_table(ds.id))} (  -- {_one_line(_comment(ds))}"
    return head + "\n" + "\n".join(lines) + "\n)"


def export_sqlite(
    world: World, out_file: Path, *, force: bool = False, progress: ProgressFn | None = None
) -> SqlExportSummary:
    """The warehouse as one SQLite file, tables flattened to ``<schema>__<table>``, with the
    catalog, world manifest and knowledge pages in ``<file>.world/``."""
    with staged_file_export(world, out_file, force=force) as (path, summary):
        con = connect_warehouse(world.warehouse_path)
        try:
            with closing(sqlite3.connect(path)) as lite:
                for ds in world.catalog.datasets:
                    summary.tables.append(_table(con, lite, ds, progress))
                lite.commit()
                lite.execute("VACUUM")
        finally:
            con.close()
    return summary


def _table(
    con: Any, lite: sqlite3.Connection, ds: DatasetMeta, progress: ProgressFn | None
) -> TableExport:
    columns = _column_types(con, ds)
    pk = primary_key(con, ds, columns[0][0])
    try:
        lite.execute(_create(ds, columns, pk))
    except sqlite3.Error as exc:
        raise SqlExportError(f"SQLite refused table {sqlite_table(ds.id)}: {exc}") from exc
    insert = f"INSERT INTO {_ident(sqlite_table(ds.id))} VALUES ({', '.join('?' for _ in columns)})"
    src = con.execute(f"SELECT * FROM {_qualified(ds.id)} ORDER BY ALL")
    written = 0
    while batch := src.fetchmany(COPY_BATCH):
        lite.executemany(insert, [tuple(_value(v) for v in row) for row in batch])
        written += len(batch)
        if progress is not None:
            progress(ds.id, written)
    return TableExport(ds.id, written, pk)
