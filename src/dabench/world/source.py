"""Worlds as data: a warehouse plus a knowledge directory, built-in or external.

Every world dabench serves, locks and validates is opened by :func:`open_world`:

- a **built-in world** (``dabench world build``) is a knowledge directory with its own DuckDB
  warehouse and ``world.json``; its identity is the declared snapshot id ``world_hash``;
- an **external world** is a directory with ``world.yaml`` (a :class:`WorldSource`:
  ``{kind: warehouse, engine: duckdb|postgres|parquet, location: ..., knowledge: DIR}``)
  whose knowledge directory has the same format; its identity hashes the knowledge files and
  a :class:`DataFingerprint` of the warehouse computed in the engine (per-table row counts
  and content hashes), or a declared ``snapshot_id``.

The knowledge directory format (version :data:`KNOWLEDGE_FORMAT_VERSION`, docs/own-data.md)::

    catalog.json        a Catalog: datasets (tables) with column descriptions, glossary,
                        curated queries, lineage
    knowledge/<id>.md   pages: YAML front matter (id, title, tags, related_datasets: the
                        tables and columns the page applies to) and a markdown body
    policies.yaml       policies as data (scope plus the SQL that applies them;
                        dabench.world.policy_data); optional for an external world
    rules.yaml          optional: the hidden business rules (the traps), with where each is
                        stated
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dabench.errors import UserInputError
from dabench.recordfile import first_error
from dabench.world.files import (
    CATALOG_FILE,
    KNOWLEDGE_DIR,
    MANIFEST_FILE,
    POLICIES_FILE,
    WAREHOUSE_FILE,
    sha256_file,
    world_hash,
)
from dabench.world.fingerprint import DataFingerprint as DataFingerprint
from dabench.world.fingerprint import TableFingerprint as TableFingerprint
from dabench.world.knowledge import parse_page
from dabench.world.model import Catalog, DatasetMeta, KnowledgePage, Trap
from dabench.world.offline import OFFLINE_CONFIG
from dabench.world.policy_data import KNOWLEDGE_FORMAT_VERSION, DataPolicy, PolicyFile

if TYPE_CHECKING:
    import duckdb

SOURCE_FILE = "world.yaml"
RULES_FILE = "rules.yaml"

EngineName = Literal["duckdb", "postgres", "parquet"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WorldSource(_Record):
    """``world.yaml``: where an external world's data and knowledge live."""

    kind: Literal["warehouse"] = "warehouse"
    engine: EngineName
    location: str
    """A DuckDB file, a ``postgresql://`` DSN, or a directory of ``<schema>/<table>.parquet``
    (relative paths are relative to the directory holding ``world.yaml``)."""
    knowledge: str = "."
    """The knowledge directory (default: the directory holding ``world.yaml``)."""
    snapshot_id: str | None = None
    """Declared identity of the data for warehouses too big to hash: when set, the
    fingerprint holds row counts only and the snapshot id instead of content hashes."""
    format_version: int = KNOWLEDGE_FORMAT_VERSION
    name: str = ""


class HiddenRule(_Record):
    """A business rule the data alone does not reveal (a trap), stated in the knowledge."""

    id: str
    trap_class: str
    """The rule's class, the ``trap_classes`` value of its tasks (e.g. ``on_time``)."""
    kind: Literal["exclusion", "units", "calendar", "definition", "deprecated", "other"]
    deciding_fact: str
    fact_locations: list[str]
    """``catalog:<dataset>[.<column>]``, ``glossary:<id>``, ``knowledge:<page id>``."""
    statement: str
    """A phrase that states the rule; the discoverability check looks for it (case and
    whitespace folded) in what a2 serves and requires it absent from what a0 serves."""
    control: bool = False
    """The data alone gives the rule away to a careful analyst (a control trap)."""
    giveaway_words: list[str] = Field(default_factory=list)
    """Words that would give the rule away in a table or column name (checked on a0)."""


class _Rules(_Record):
    format_version: int = KNOWLEDGE_FORMAT_VERSION
    rules: list[HiddenRule] = Field(default_factory=list)


def knowledge_files(root: Path) -> dict[str, str]:
    """Path -> SHA-256 of the files of the knowledge format in ``root`` (catalog, pages,
    policies, rules): other files there (tasks, locks, notes) are not part of the world."""
    files = [root / CATALOG_FILE, root / POLICIES_FILE, root / RULES_FILE]
    files += sorted((root / KNOWLEDGE_DIR).glob("*.md"))
    return {f.relative_to(root).as_posix(): sha256_file(f) for f in files if f.is_file()}


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def quote_table(table_id: str) -> str:
    """``schema.table`` as a quoted SQL identifier."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in table_id.split("."))


def duckdb_table_fingerprint(con: duckdb.DuckDBPyConnection, table_id: str) -> TableFingerprint:
    """Row count and the sum of DuckDB's row hashes (order-independent, duplicate-sensitive)."""
    row = con.execute(
        f"SELECT count(*), coalesce(sum(hash(t)::HUGEINT), 0)::VARCHAR "
        f"FROM {quote_table(table_id)} AS t"
    ).fetchone()
    assert row is not None
    return TableFingerprint(rows=int(row[0]), content_hash=str(row[1]))


_PG_ROW_HASH = (
    "SELECT count(*), coalesce(sum(('x' || substr(md5(t::text), 1, 15))::bit(60)::bigint"
    "::numeric), 0)::text FROM {table} AS t"
)


def fingerprint(world: OpenWorld, *, hash_content: bool | None = None) -> DataFingerprint:
    """The data fingerprint of ``world``'s catalog tables, computed in its engine."""
    content = world.source.snapshot_id is None if hash_content is None else hash_content
    tables: dict[str, TableFingerprint] = {}
    ids = [ds.id for ds in world.catalog.datasets]
    if world.source.engine == "postgres":
        import psycopg

        try:
            with psycopg.connect(world.source.location, autocommit=True) as pg:
                for tid in ids:
                    sql = (
                        _PG_ROW_HASH.format(table=quote_table(tid))
                        if content
                        else f"SELECT count(*), NULL FROM {quote_table(tid)}"
                    )
                    row = pg.execute(sql.encode()).fetchone()
                    assert row is not None
                    tables[tid] = TableFingerprint(rows=int(row[0]), content_hash=row[1])
        except psycopg.Error as exc:
            raise UserInputError(f"world {world.path}: PostgreSQL: {exc}".strip()) from exc
    else:
        import duckdb  # imported on use: reading a run's task snapshot needs no engine

        con = world.connect()
        try:
            for tid in ids:
                try:
                    if content:
                        tables[tid] = duckdb_table_fingerprint(con, tid)
                    else:
                        row = con.execute(f"SELECT count(*) FROM {quote_table(tid)}").fetchone()
                        assert row is not None
                        tables[tid] = TableFingerprint(rows=int(row[0]))
                except duckdb.Error as exc:
                    raise UserInputError(
                        f"world {world.path}: table {tid} of the catalog: {exc}"
                    ) from exc
        finally:
            con.close()
    body = {
        "engine": world.source.engine,
        "snapshot_id": world.source.snapshot_id,
        "tables": {t: f.model_dump() for t, f in tables.items()},
    }
    return DataFingerprint(
        engine=world.source.engine,
        tables=tables,
        snapshot_id=world.source.snapshot_id,
        hash=_digest(body),
    )


@dataclass
class OpenWorld:
    """A world opened for serving, locking and validation (built-in or external)."""

    path: Path
    """The directory that names the world (``--world DIR``)."""
    source: WorldSource
    knowledge_dir: Path
    catalog: Catalog
    pages: list[KnowledgePage]
    policies: list[DataPolicy]
    rules: list[HiddenRule]
    declared_hash: str | None = None
    """A built world's ``world_hash`` from its ``world.json`` (a declared snapshot id)."""
    traps: list[Trap | HiddenRule] = field(default_factory=list)
    """The planted traps (built-in) or the hidden rules (external), with fact locations."""
    _fingerprint: DataFingerprint | None = field(default=None, repr=False)
    _hash: str | None = field(default=None, repr=False)

    @property
    def location(self) -> str:
        """The warehouse location resolved against the world directory."""
        loc = self.source.location
        if self.source.engine == "postgres" or Path(loc).is_absolute():
            return loc
        return str((self.path / loc).resolve())

    @property
    def warehouse_path(self) -> Path:
        """The DuckDB file to serve (``parquet``: the DuckDB copy of the Parquet files)."""
        if self.source.engine == "duckdb":
            return Path(self.location)
        if self.source.engine == "parquet":
            return parquet_copy(self)
        raise UserInputError(f"world {self.path}: a PostgreSQL world has no DuckDB file")

    @property
    def dsn(self) -> str | None:
        """The PostgreSQL DSN of a ``postgres`` world."""
        return self.source.location if self.source.engine == "postgres" else None

    @property
    def builtin(self) -> bool:
        """Whether the world was built by ``dabench world build`` (its identity is declared in
        ``world.json``, its data generated from a seed); every other difference lies in the
        knowledge directory both kinds share."""
        return self.declared_hash is not None

    def fingerprint(self) -> DataFingerprint | None:
        """The data fingerprint (``None`` for a built world: its files are hashed)."""
        if self.declared_hash is not None:
            return None
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self)
        return self._fingerprint

    @property
    def world_hash(self) -> str:
        """The world's identity: the built-in ``world_hash``, or a hash of the knowledge
        files, the engine and the data fingerprint."""
        if self.declared_hash is not None:
            return self.declared_hash
        if self._hash is None:
            files = knowledge_files(self.knowledge_dir)
            fp = self.fingerprint()
            assert fp is not None
            self._hash = _digest(
                {
                    "format_version": self.source.format_version,
                    "knowledge": world_hash(files),
                    "data": fp.hash,
                }
            )
        return self._hash

    def dataset(self, dataset_id: str) -> DatasetMeta:
        """The catalog record of a dataset; ``KeyError`` naming the id if unknown."""
        for ds in self.catalog.datasets:
            if ds.id == dataset_id:
                return ds
        raise KeyError(f"no dataset {dataset_id!r} in world {self.path}")

    def ids(self) -> set[str]:
        """Every id a task may name: datasets, columns, glossary terms, queries, pages."""
        ids: set[str] = set()
        for ds in self.catalog.datasets:
            ids.add(ds.id)
            ids.update(f"{ds.id}.{c.name}" for c in ds.columns)
        ids.update(g.id for g in self.catalog.glossary)
        ids.update(q.id for q in self.catalog.curated_queries)
        ids.update(p.id for p in self.pages)
        return ids

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A read-only, offline DuckDB connection (``duckdb`` and ``parquet`` engines)."""
        if self.source.engine == "postgres":
            raise UserInputError(f"world {self.path}: a PostgreSQL world has no DuckDB file")
        if self.source.engine == "parquet":
            return parquet_views(Path(self.location))
        path = Path(self.location)
        if not path.is_file():
            raise UserInputError(f"world {self.path}: no DuckDB file {path}")
        import duckdb

        return duckdb.connect(str(path), read_only=True, config=dict(OFFLINE_CONFIG))


def parquet_tables(root: Path) -> list[tuple[str, Path]]:
    """``(schema.table, file)`` of every ``<schema>/<table>.parquet`` under ``root``."""
    return [(f"{f.parent.name}.{f.stem}", f) for f in sorted(root.glob("*/*.parquet"))]


def parquet_views(root: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with one view per Parquet file; file access limited to ``root``."""
    if not root.is_dir():
        raise UserInputError(f"parquet location {root}: not a directory")
    import duckdb

    config = {k: v for k, v in OFFLINE_CONFIG.items() if k != "enable_external_access"}
    con = duckdb.connect(":memory:", config=config)
    con.execute("SET allowed_directories = ?", [[str(root.resolve())]])
    con.execute("SET enable_external_access = false")
    for table_id, file in parquet_tables(root):
        schema = table_id.split(".")[0]
        con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        literal = str(file.resolve()).replace("'", "''")
        con.execute(f"CREATE VIEW {quote_table(table_id)} AS SELECT * FROM '{literal}'")
    return con


def parquet_copy(world: OpenWorld) -> Path:
    """A DuckDB copy of a Parquet world's tables, keyed by its fingerprint, for the platform's
    read-only workers (which open one database file with file access disabled)."""
    from dabench.sandbox import cache_root

    fp = world.fingerprint()
    assert fp is not None
    path = cache_root() / "parquet-worlds" / f"{fp.hash[:24]}.duckdb"
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    import duckdb

    out = duckdb.connect(str(tmp))
    try:
        root = Path(world.location).resolve()
        for table_id, file in parquet_tables(root):
            schema = table_id.split(".")[0]
            out.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            literal = str(file.resolve()).replace("'", "''")
            out.execute(f"CREATE TABLE {quote_table(table_id)} AS SELECT * FROM '{literal}'")
        out.execute("CHECKPOINT")
    finally:
        out.close()
    tmp.rename(path)
    return path


def _yaml_model(path: Path, model: type[BaseModel]) -> Any:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise UserInputError(f"{path}: invalid YAML: {exc}") from exc
    try:
        return model.model_validate(data if data is not None else {})
    except ValidationError as exc:
        raise UserInputError(f"{path}: {first_error(exc)}") from exc


def read_source(path: Path) -> WorldSource:
    """The validated ``world.yaml`` in ``path``."""
    source: WorldSource = _yaml_model(path / SOURCE_FILE, WorldSource)
    if source.format_version != KNOWLEDGE_FORMAT_VERSION:
        raise UserInputError(
            f"{path / SOURCE_FILE}: format_version {source.format_version} is not supported "
            f"(this dabench reads version {KNOWLEDGE_FORMAT_VERSION})"
        )
    return source


def load_knowledge(
    root: Path,
) -> tuple[Catalog, list[KnowledgePage], list[DataPolicy], list[HiddenRule]]:
    """Catalog, pages, policies and hidden rules of the knowledge directory ``root``."""
    file = root / CATALOG_FILE
    if not file.is_file():
        raise UserInputError(f"{file}: not found (is {root} a knowledge directory?)")
    try:
        catalog = Catalog.model_validate_json(file.read_bytes())
    except ValidationError as exc:
        raise UserInputError(f"{file}: {first_error(exc)}") from exc
    pages = []
    for page_file in sorted((root / KNOWLEDGE_DIR).glob("*.md")):
        try:
            pages.append(parse_page(page_file.read_text(encoding="utf-8"), str(page_file)))
        except (ValueError, TypeError, ValidationError) as exc:
            raise UserInputError(f"{page_file}: invalid knowledge page: {exc}") from exc
    policies: list[DataPolicy] = []
    if (root / POLICIES_FILE).is_file():
        policies = list(_yaml_model(root / POLICIES_FILE, PolicyFile).policies)
    rules: list[HiddenRule] = []
    if (root / RULES_FILE).is_file():
        rules = list(_yaml_model(root / RULES_FILE, _Rules).rules)
    return catalog, pages, policies, rules


def is_world_dir(path: Path) -> bool:
    """Whether ``path`` is a world directory: built (``world.json``) or external
    (``world.yaml``)."""
    return (path / MANIFEST_FILE).is_file() or (path / SOURCE_FILE).is_file()


def open_world(path: Path | str) -> OpenWorld:
    """Open the world named by the directory ``path``: a built world (``world.json``, its
    identity declared there) or an external one (``world.yaml``); either way the knowledge
    directory is read by :func:`load_knowledge`. Raises :class:`UserInputError` naming what is
    missing or invalid."""
    path = Path(path)
    if not path.is_dir():
        raise UserInputError(f"--world {path}: not a directory")
    declared: str | None = None
    traps: list[Trap] | None = None
    if (path / MANIFEST_FILE).is_file():
        source, declared, traps = _built_source(path)
        knowledge = path
    elif (path / SOURCE_FILE).is_file():
        source = read_source(path)
        knowledge = (path / source.knowledge).resolve()
    else:
        raise UserInputError(
            f"--world {path}: neither a built world (world.json) nor an external world "
            f"({SOURCE_FILE}; create one with `dabench world init`)"
        )
    catalog, pages, policies, rules = load_knowledge(knowledge)
    return OpenWorld(
        path=path,
        source=source,
        knowledge_dir=knowledge,
        catalog=catalog,
        pages=pages,
        policies=policies,
        rules=rules,
        declared_hash=declared,
        traps=list(rules) if traps is None else list(traps),
    )


def _built_source(path: Path) -> tuple[WorldSource, str, list[Trap]]:
    """A built world as a source: its own DuckDB file, the manifest's hash as a declared
    snapshot id, and the planted traps."""
    from dabench.world.load import read_manifest

    manifest = read_manifest(path)
    if manifest.policies_sha256 is None:
        raise UserInputError(
            f"{path}: built by an older dabench, without {POLICIES_FILE} (the policies as "
            f"data); rebuild it: dabench world build --seed {manifest.seed} --scale "
            f"{manifest.scale} --out {path} --force (its world hash stays the same)"
        )
    if not (path / WAREHOUSE_FILE).is_file():
        raise UserInputError(f"{path}: missing {WAREHOUSE_FILE}")
    source = WorldSource(engine="duckdb", location=WAREHOUSE_FILE, snapshot_id=None)
    return source, manifest.world_hash, list(manifest.traps)


def write_source_dir(source: WorldSource, parent: Path) -> Path:
    """A directory under ``parent`` holding ``source`` as ``world.yaml`` (named by its hash;
    written once)."""
    data = source.model_dump(mode="json", exclude_none=True)
    path = parent / _digest(data)[:16]
    if not (path / SOURCE_FILE).is_file():
        path.mkdir(parents=True, exist_ok=True)
        tmp = path / f".{SOURCE_FILE}.tmp"
        tmp.write_text(yaml.safe_dump(data, sort_keys=True), encoding="utf-8")
        tmp.replace(path / SOURCE_FILE)
    return path
