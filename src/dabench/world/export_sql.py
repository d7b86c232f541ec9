"""Export a built world to other SQL engines: PostgreSQL, Parquet files, or a DuckDB file in an
older storage format (``dabench world export --postgres DSN | --parquet DIR | --duckdb FILE``).

Every warehouse table keeps its schema, name, column names and types, rows and (for
PostgreSQL) the catalog's descriptions as ``COMMENT ON``. A table's first column is its primary
key when it is named ``*_id`` and is unique and non-null in the data (checked, not assumed).
The knowledge layer travels with it: PostgreSQL gets a schema ``dabench_knowledge`` (pages,
glossary, curated queries, lineage and the world's identity); Parquet and DuckDB exports get
``catalog.json``, ``world.json`` and the ``knowledge/`` pages beside the data.

Exports are idempotent: PostgreSQL tables are dropped and re-created in one transaction and
loaded with ``COPY``; files are written to a temporary name and renamed into place. Ground
truth stays the world's own: ``dabench tasks validate --warehouse`` recomputes every task's
truth against an export and compares it with the truth lock.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from dabench.errors import DabenchError, UserInputError
from dabench.world.constants import STORAGE_VERSIONS as STORAGE_VERSIONS
from dabench.world.load import World
from dabench.world.model import DatasetMeta
from dabench.world.warehouse import OFFLINE_CONFIG, connect_warehouse

KNOWLEDGE_SCHEMA = "dabench_knowledge"
"""The PostgreSQL schema holding the knowledge layer."""
"""DuckDB storage versions ``--duckdb FILE --storage-version`` accepts (older readers: e.g.
v1.5.0 is readable by DuckDB 1.5, v1.0.0 by every DuckDB since 0.10)."""
COPY_BATCH = 5000
"""Rows fetched from DuckDB per batch while streaming into PostgreSQL."""
EXPORT_MEMORY_LIMIT = "512MB"
"""DuckDB memory limit while streaming a world into PostgreSQL (and checking its keys): work
larger than this spills to a temporary directory, so the export's memory does not grow with
the world's scale."""

ProgressFn = Callable[[str, int], None]
"""``(table, rows written so far)``."""


class SqlExportError(DabenchError):
    """The target engine refused part of the export (the message names the table)."""


@dataclass
class TableExport:
    """What the export wrote for one table."""

    table: str
    rows: int
    primary_key: str | None = None


@dataclass
class SqlExportSummary:
    """The result of one export."""

    target: str
    world_hash: str
    tables: list[TableExport] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def rows(self) -> int:
        """Rows written over every table."""
        return sum(t.rows for t in self.tables)


_PG_TYPES = {
    "BIGINT": "bigint", "INTEGER": "integer", "SMALLINT": "smallint", "TINYINT": "smallint",
    "DOUBLE": "double precision", "FLOAT": "real", "REAL": "real", "BOOLEAN": "boolean",
    "DATE": "date", "TIMESTAMP": "timestamp", "TIMESTAMP WITH TIME ZONE": "timestamptz",
    "TIMESTAMPTZ": "timestamptz", "VARCHAR": "text", "TIME": "time", "UUID": "uuid",
}  # fmt: skip


def pg_type(duckdb_type: str) -> str:
    """The PostgreSQL type of a DuckDB column type (``DECIMAL(p,s)`` -> ``numeric(p,s)``)."""
    t = duckdb_type.upper().strip()
    if t.startswith(("DECIMAL", "NUMERIC")):
        return "numeric" + t[t.index("(") :].replace(" ", "") if "(" in t else "numeric"
    if t in _PG_TYPES:
        return _PG_TYPES[t]
    raise SqlExportError(f"no PostgreSQL type for DuckDB type {duckdb_type!r}")


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _qualified(dataset_id: str) -> str:
    schema, table = dataset_id.split(".", 1)
    return f"{_ident(schema)}.{_ident(table)}"


def _column_types(con: duckdb.DuckDBPyConnection, ds: DatasetMeta) -> list[tuple[str, str]]:
    schema, table = ds.id.split(".", 1)
    rows = con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE schema_name = ? AND "
        "table_name = ? ORDER BY column_index",
        [schema, table],
    ).fetchall()
    return [(str(n), str(t)) for n, t in rows]


def primary_key(con: duckdb.DuckDBPyConnection, ds: DatasetMeta, first: str) -> str | None:
    """``first`` when it is named ``*_id`` and is unique and non-null in the data."""
    if not first.endswith("_id"):
        return None
    # GROUP BY rather than count(DISTINCT): a grouping larger than memory spills to disk.
    col, table = _ident(first), _qualified(ds.id)
    row = con.execute(
        f"SELECT NOT EXISTS (SELECT 1 FROM {table} WHERE {col} IS NULL) AND NOT EXISTS "
        f"(SELECT 1 FROM {table} GROUP BY {col} HAVING count(*) > 1)"
    ).fetchone()
    return first if row and row[0] else None


def _comment(ds: DatasetMeta) -> str:
    text = ds.description
    if ds.deprecated:
        text += f" DEPRECATED: use {ds.replaced_by}." if ds.replaced_by else " DEPRECATED."
    return text


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def export_postgres(
    world: World, dsn: str, *, progress: ProgressFn | None = None
) -> SqlExportSummary:
    """Load the world into the PostgreSQL database at ``dsn`` (see the module docstring)."""
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - the dev install has it
        raise UserInputError(
            "the PostgreSQL driver is not installed: pip install 'dabench[postgres]'"
        ) from exc
    t0 = time.perf_counter()
    summary = SqlExportSummary(target=redact_dsn(dsn), world_hash=world.world_hash)
    try:
        pg = psycopg.connect(dsn)
    except psycopg.Error as exc:
        raise UserInputError(f"--postgres {redact_dsn(dsn)}: cannot connect: {exc}") from exc
    spill = Path(tempfile.mkdtemp(prefix="dabench-export-spill-"))
    con = connect_warehouse(
        world.warehouse_path, memory_limit=EXPORT_MEMORY_LIMIT, temp_directory=spill
    )
    try:
        with pg.transaction(), pg.cursor() as cur:
            for ds in world.catalog.datasets:
                summary.tables.append(_pg_table(con, cur, ds, progress))
            _pg_knowledge(cur, world)
    except psycopg.Error as exc:
        raise SqlExportError(f"PostgreSQL refused the export: {exc}") from exc
    finally:
        pg.close()
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    summary.elapsed_s = time.perf_counter() - t0
    return summary


def _pg_table(
    con: duckdb.DuckDBPyConnection, cur: Any, ds: DatasetMeta, progress: ProgressFn | None
) -> TableExport:
    schema = ds.id.split(".", 1)[0]
    columns = _column_types(con, ds)
    pk = primary_key(con, ds, columns[0][0])
    described = {c.name: c for c in ds.columns}
    defs = [f"{_ident(n)} {pg_type(t)}" for n, t in columns]
    table = _qualified(ds.id)
    cur.execute(f"CREATE SCHEMA IF NOT EXISTS {_ident(schema)}")
    cur.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
    cur.execute(f"CREATE TABLE {table} ({', '.join(defs)})")
    cur.execute(f"COMMENT ON TABLE {table} IS {_literal(_comment(ds))}")
    for name, _type in columns:
        meta = described.get(name)
        if meta is None:
            continue
        text = meta.description + (f" Unit: {meta.unit}." if meta.unit else "")
        cur.execute(f"COMMENT ON COLUMN {table}.{_ident(name)} IS {_literal(text)}")
    names = ", ".join(_ident(n) for n, _ in columns)
    # Rows stream in the warehouse's own order (each table is written in its dataset's
    # order_by), so nothing sorts the whole table; the primary key is built once after the
    # load, which keeps the load linear in the row count instead of growing an index per row.
    src = con.execute(f"SELECT * FROM {table}")
    written = 0
    with cur.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        while batch := src.fetchmany(COPY_BATCH):
            for row in batch:
                copy.write_row(row)
            written += len(batch)
            if progress is not None:
                progress(ds.id, written)
    if pk:
        cur.execute(f"ALTER TABLE {table} ADD PRIMARY KEY ({_ident(pk)})")
    return TableExport(ds.id, written, pk)


def _pg_knowledge(cur: Any, world: World) -> None:
    k = _ident(KNOWLEDGE_SCHEMA)
    cur.execute(f"DROP SCHEMA IF EXISTS {k} CASCADE")
    cur.execute(f"CREATE SCHEMA {k}")
    cur.execute(
        f"CREATE TABLE {k}.pages (id text PRIMARY KEY, title text NOT NULL, tags text[], "
        "related_datasets text[], body text NOT NULL)"
    )
    cur.execute(
        f"CREATE TABLE {k}.glossary (id text PRIMARY KEY, name text NOT NULL, definition text "
        "NOT NULL, synonyms text[], related_datasets text[])"
    )
    cur.execute(
        f"CREATE TABLE {k}.curated_queries (id text PRIMARY KEY, name text NOT NULL, "
        "description text NOT NULL, sql text NOT NULL, datasets text[])"
    )
    cur.execute(
        f"CREATE TABLE {k}.lineage (upstream text NOT NULL, downstream text NOT NULL, "
        "transform text NOT NULL)"
    )
    cur.execute(f"CREATE TABLE {k}.world (world_hash text PRIMARY KEY, seed bigint, scale int)")
    cat = world.catalog
    loads: list[tuple[str, list[str], list[tuple[Any, ...]]]] = [
        ("pages", ["id", "title", "tags", "related_datasets", "body"],
         [(p.id, p.title, p.tags, p.related_datasets, p.body) for p in world.pages]),
        ("glossary", ["id", "name", "definition", "synonyms", "related_datasets"],
         [(g.id, g.name, g.definition, g.synonyms, g.related_datasets) for g in cat.glossary]),
        ("curated_queries", ["id", "name", "description", "sql", "datasets"],
         [(q.id, q.name, q.description, q.sql, q.datasets) for q in cat.curated_queries]),
        ("lineage", ["upstream", "downstream", "transform"],
         [(e.upstream, e.downstream, e.transform) for e in cat.lineage]),
        ("world", ["world_hash", "seed", "scale"],
         [(world.world_hash, world.manifest.seed, world.manifest.scale)]),
    ]  # fmt: skip
    for table, cols, rows in loads:
        with cur.copy(f"COPY {k}.{_ident(table)} ({', '.join(cols)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def redact_dsn(dsn: str) -> str:
    """A DSN with any password replaced by ``***``."""
    if "://" in dsn and "@" in dsn:
        scheme, rest = dsn.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        if ":" in creds:
            creds = creds.split(":", 1)[0] + ":***"
        return f"{scheme}://{creds}@{host}"
    return dsn


def _writer(world: World, out_dir: Path) -> duckdb.DuckDBPyConnection:
    """A read-only warehouse connection that may write files under ``out_dir`` only."""
    config: dict[str, Any] = {
        k: v for k, v in OFFLINE_CONFIG.items() if k != "enable_external_access"
    }
    con = duckdb.connect(str(world.warehouse_path), read_only=True, config=config)
    con.execute("SET allowed_directories = ?", [[str(out_dir)]])
    con.execute("SET enable_external_access = false")
    return con


@contextmanager
def staged_file_export(
    world: World, out_file: Path, *, force: bool
) -> Iterator[tuple[Path, SqlExportSummary]]:
    """Build a one-file export in a temporary folder beside ``out_file``.

    Yields the path to write and the summary to fill; on a clean exit the file and its
    ``<name>.world`` sidecar replace ``out_file`` (refused when it exists and not ``force``),
    and the summary gets the elapsed time. The temporary folder is always removed."""
    if out_file.exists() and not force:
        raise UserInputError(f"{out_file}: exists (pass --force to replace it)")
    t0 = time.perf_counter()
    out_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_file.name}-", dir=out_file.parent))
    summary = SqlExportSummary(target=str(out_file), world_hash=world.world_hash)
    try:
        path = tmp / out_file.name
        yield path, summary
        install_file_export(world, tmp, path, out_file)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary.elapsed_s = time.perf_counter() - t0


def install_file_export(world: World, tmp: Path, path: Path, out_file: Path) -> None:
    """Move a file export built at ``path`` (inside ``tmp``) to ``out_file``, with its
    ``<name>.world`` sidecar beside it (replacing earlier ones)."""
    sidecar = tmp / f"{out_file.name}.world"
    sidecar.mkdir()
    _sidecar(world, sidecar)
    target_sidecar = out_file.parent / sidecar.name
    if target_sidecar.exists():
        shutil.rmtree(target_sidecar)
    if out_file.exists():
        out_file.unlink()
    sidecar.rename(target_sidecar)
    path.rename(out_file)


def _sidecar(world: World, out_dir: Path) -> None:
    """``catalog.json``, ``world.json``, ``policies.yaml`` and ``knowledge/`` beside exported
    data."""
    for name in ("catalog.json", "world.json", "policies.yaml"):
        if (world.path / name).is_file():
            shutil.copy2(world.path / name, out_dir / name)
    if (world.path / "knowledge").is_dir():
        shutil.copytree(world.path / "knowledge", out_dir / "knowledge")


def _fresh_dir(target: Path, *, force: bool) -> Path:
    if target.exists() and (not target.is_dir() or any(target.iterdir())) and not force:
        raise UserInputError(f"{target}: exists and is not empty (pass --force to replace it)")
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))


def _replace(tmp: Path, target: Path) -> None:
    if target.is_dir():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    tmp.rename(target)


def export_parquet(
    world: World, out_dir: Path, *, force: bool = False, progress: ProgressFn | None = None
) -> SqlExportSummary:
    """One ``<schema>/<table>.parquet`` per table (rows in ``ORDER BY ALL`` order), with the
    catalog, world manifest and knowledge pages beside them."""
    t0 = time.perf_counter()
    tmp = _fresh_dir(out_dir, force=force)
    summary = SqlExportSummary(target=str(out_dir), world_hash=world.world_hash)
    try:
        con = _writer(world, tmp)
        try:
            for ds in world.catalog.datasets:
                schema, table = ds.id.split(".", 1)
                (tmp / schema).mkdir(exist_ok=True)
                path = tmp / schema / f"{table}.parquet"
                con.execute(
                    f"COPY (SELECT * FROM {_qualified(ds.id)} ORDER BY ALL) TO "
                    f"{_literal(str(path))} (FORMAT parquet, COMPRESSION zstd)"
                )
                summary.tables.append(TableExport(ds.id, ds.row_count))
                if progress is not None:
                    progress(ds.id, ds.row_count)
        finally:
            con.close()
        _sidecar(world, tmp)
        (tmp / "export.json").write_text(
            json.dumps({"world_hash": world.world_hash, "format": "parquet"}, indent=2) + "\n",
            encoding="utf-8",
        )
        _replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    summary.elapsed_s = time.perf_counter() - t0
    return summary


def export_duckdb(
    world: World,
    out_file: Path,
    *,
    storage_version: str = "v1.0.0",
    force: bool = False,
    progress: ProgressFn | None = None,
) -> SqlExportSummary:
    """The warehouse as a DuckDB file written in ``storage_version`` (for older DuckDB
    readers), with the catalog, world manifest and knowledge pages in ``<file>.world/``."""
    if storage_version not in STORAGE_VERSIONS:
        raise UserInputError(
            f"--storage-version {storage_version!r}: expected one of {', '.join(STORAGE_VERSIONS)}"
        )
    with staged_file_export(world, out_file, force=force) as (path, summary):
        config = {k: v for k, v in OFFLINE_CONFIG.items() if k != "enable_external_access"}
        con = duckdb.connect(":memory:", config=config)
        try:
            con.execute(f"ATTACH {_literal(str(world.warehouse_path))} AS wh (READ_ONLY)")
            con.execute("SET allowed_directories = ?", [[str(path.parent)]])
            con.execute("SET enable_external_access = false")
            con.execute(
                f"ATTACH {_literal(str(path))} AS export_db (STORAGE_VERSION "
                f"{_literal(storage_version)})"
            )
            schemas = sorted({ds.id.split(".", 1)[0] for ds in world.catalog.datasets})
            for schema in schemas:
                con.execute(f"CREATE SCHEMA export_db.{_ident(schema)}")
            for ds in world.catalog.datasets:
                con.execute(
                    f"CREATE TABLE export_db.{_qualified(ds.id)} AS SELECT * FROM "
                    f"wh.{_qualified(ds.id)} ORDER BY ALL"
                )
                summary.tables.append(TableExport(ds.id, ds.row_count))
                if progress is not None:
                    progress(ds.id, ds.row_count)
            con.execute("DETACH export_db")
        finally:
            con.close()
    return summary


def storage_version_number(path: Path) -> int:
    """The storage version number in a DuckDB file's header (what readers check)."""
    with path.open("rb") as fh:
        header = fh.read(20)
    if len(header) < 20 or header[8:12] != b"DUCK":
        raise UserInputError(f"{path}: not a DuckDB database file")
    return int.from_bytes(header[12:20], "little")
