"""Export a built world into Elasticsearch (``dabench world export --elasticsearch URL``).

Every warehouse table becomes one index ``<prefix><schema>.<table>`` with an explicit mapping
(DuckDB types mapped to Elasticsearch field types) whose ``_meta.dabench`` carries what the
catalog says about the dataset and each column (description, unit, glossary terms,
deprecation), as a catalog would. The knowledge pages, glossary terms and dataset
descriptions go into one searchable index ``<prefix>knowledge``. Document ids are the row's
position in ``ORDER BY ALL`` (tables) or ``<kind>:<id>`` (knowledge), so a re-run overwrites
the same documents: exporting the same world twice leaves the same indices. An index written
from another world (``_meta.dabench.world_hash``) is refused unless ``recreate``.

Ground truth stays the world's SQL truth: the indices are a copy for targets that read
Elasticsearch (Elastic Agent Builder), never the source of a task's answer.
"""

from __future__ import annotations

import datetime as dt
import decimal
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dabench.elastic import (
    bulk_write,
    connect_elasticsearch,
    describe_api_error,
    require_elasticsearch,
)
from dabench.errors import DabenchError, UserInputError
from dabench.listing import stdout_console
from dabench.world.load import World, load_world
from dabench.world.model import ColumnMeta, DatasetMeta

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

KNOWLEDGE_INDEX = "knowledge"
"""Suffix of the knowledge index (after the prefix)."""
FIELD_META_MAX = 50
"""Elasticsearch limits a field ``meta`` value to 50 characters."""

_TYPES: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("BIGINT", "INTEGER", "SMALLINT", "TINYINT", "HUGEINT", "UBIGINT", "UINTEGER",
      "USMALLINT", "UTINYINT", "INT"), {"type": "long"}),
    (("DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC"), {"type": "double"}),
    (("BOOLEAN", "BOOL"), {"type": "boolean"}),
    (("DATE",), {"type": "date", "format": "strict_date"}),
    (("TIMESTAMP", "DATETIME", "TIMESTAMPTZ"), {"type": "date"}),
    (("VARCHAR", "TEXT", "STRING", "UUID", "CHAR"), {"type": "keyword"}),
]  # fmt: skip


class ExportError(DabenchError):
    """Elasticsearch refused part of the export (the message names the index and cause)."""


def es_field_type(duckdb_type: str) -> dict[str, Any]:
    """The Elasticsearch mapping of a DuckDB column type (``keyword`` when unknown)."""
    base = duckdb_type.upper().split("(")[0].strip()
    for names, mapping in _TYPES:
        if base in names:
            return dict(mapping)
    return {"type": "keyword"}


def index_name(prefix: str, dataset_id: str) -> str:
    """The index of a dataset: ``<prefix><schema>.<table>``, lower case."""
    return f"{prefix}{dataset_id}".lower()


def _column_meta(col: ColumnMeta) -> dict[str, Any]:
    meta: dict[str, Any] = {"description": col.description, "type": col.type}
    if col.unit:
        meta["unit"] = col.unit
    if col.tags:
        meta["tags"] = col.tags
    if col.glossary_terms:
        meta["glossary_terms"] = col.glossary_terms
    return meta


def table_mapping(ds: DatasetMeta, world: World) -> dict[str, Any]:
    """Explicit mapping of a dataset's index, with the catalog in ``_meta.dabench``."""
    properties: dict[str, Any] = {}
    for col in ds.columns:
        prop = es_field_type(col.type)
        if col.unit and len(col.unit) <= FIELD_META_MAX:
            prop["meta"] = {"unit": col.unit}
        properties[col.name] = prop
    meta = {
        "world_hash": world.world_hash,
        "seed": world.manifest.seed,
        "scale": world.manifest.scale,
        "dataset": ds.id,
        "title": ds.title,
        "description": ds.description,
        "kind": ds.kind,
        "domain": ds.domain,
        "owner": ds.owner,
        "tags": ds.tags,
        "glossary_terms": ds.glossary_terms,
        "row_count": ds.row_count,
        "last_loaded": ds.last_loaded.isoformat(),
        "deprecated": ds.deprecated,
        "replaced_by": ds.replaced_by,
        "upstream": ds.upstream,
        "columns": {c.name: _column_meta(c) for c in ds.columns},
    }
    return {"dynamic": "strict", "_meta": {"dabench": meta}, "properties": properties}


def knowledge_mapping(world: World) -> dict[str, Any]:
    """Mapping of the knowledge index (pages, glossary terms, dataset descriptions)."""
    return {
        "dynamic": "strict",
        "_meta": {"dabench": {"world_hash": world.world_hash, "kind": "knowledge"}},
        "properties": {
            "kind": {"type": "keyword"},
            "ref": {"type": "keyword"},
            "title": {"type": "text", "fields": {"keyword": {"type": "keyword"}}},
            "body": {"type": "text"},
            "tags": {"type": "keyword"},
            "related_datasets": {"type": "keyword"},
        },
    }


def knowledge_docs(world: World) -> list[tuple[str, dict[str, Any]]]:
    """``(id, document)`` of every knowledge page, glossary term and dataset description."""
    docs: list[tuple[str, dict[str, Any]]] = []
    for page in world.pages:
        doc = {"kind": "page", "ref": page.id, "title": page.title, "body": page.body,
               "tags": page.tags, "related_datasets": page.related_datasets}  # fmt: skip
        docs.append((f"page:{page.id}", doc))
    for term in world.catalog.glossary:
        body = term.definition
        if term.synonyms:
            body += "\nSynonyms: " + ", ".join(term.synonyms)
        doc = {"kind": "glossary", "ref": term.id, "title": term.name, "body": body,
               "tags": [], "related_datasets": term.related_datasets}  # fmt: skip
        docs.append((f"glossary:{term.id}", doc))
    for ds in world.catalog.datasets:
        lines = [ds.description]
        if ds.deprecated:
            lines.append(f"DEPRECATED: use {ds.replaced_by} instead.")
        lines += [f"- {c.name} ({c.type}): {c.description}" for c in ds.columns]
        doc = {"kind": "dataset", "ref": ds.id, "title": ds.title, "body": "\n".join(lines),
               "tags": ds.tags, "related_datasets": [ds.id]}  # fmt: skip
        docs.append((f"dataset:{ds.id}", doc))
    return docs


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.time | dt.timedelta):
        return str(value)
    return value


def table_rows(
    con: duckdb.DuckDBPyConnection, ds: DatasetMeta, batch: int = 2000
) -> Iterator[dict[str, Any]]:
    """The rows of a dataset in a deterministic order (``ORDER BY ALL``), as JSON values."""
    cur = con.execute(f"SELECT * FROM {ds.id} ORDER BY ALL")
    names = [d[0] for d in cur.description or []]
    while rows := cur.fetchmany(batch):
        for row in rows:
            yield {n: _json_value(v) for n, v in zip(names, row, strict=True)}


@dataclass
class IndexResult:
    """What the export did to one index."""

    index: str
    docs: int
    action: str
    """``created``, ``reused`` (same world: documents overwritten) or ``recreated``."""


@dataclass
class ExportSummary:
    """The result of :func:`export_world`."""

    world_hash: str
    indices: list[IndexResult] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def docs(self) -> int:
        """Documents written over all indices."""
        return sum(i.docs for i in self.indices)


ProgressHook = Callable[[str, int, int], None]
"""``(index, docs written so far, docs expected)``."""


class ElasticsearchExporter:
    """Writes one world into one Elasticsearch cluster."""

    def __init__(
        self,
        client: Elasticsearch,
        world: World,
        *,
        prefix: str = "dabench-",
        recreate: bool = False,
        chunk_size: int = 500,
        progress: ProgressHook | None = None,
        datasets: Sequence[str] | None = None,
    ) -> None:
        known = {d.id for d in world.catalog.datasets}
        unknown = sorted(set(datasets or ()) - known)
        if unknown:
            raise UserInputError(f"--dataset {unknown[0]!r}: no such dataset in {world.path}")
        if prefix != prefix.lower() or any(c in prefix for c in ' "*\\/<>|,#?:'):
            raise UserInputError(f"--prefix {prefix!r}: index names must be lower case "
                                 "without spaces or any of \" * \\ / < > | , # ? :")  # fmt: skip
        self.es = client
        self.world = world
        self.prefix = prefix
        self.recreate = recreate
        self.chunk_size = chunk_size
        self.progress = progress or (lambda _i, _d, _t: None)
        self.datasets = [
            d for d in world.catalog.datasets if datasets is None or d.id in set(datasets)
        ]

    def _prepare(self, index: str, mapping: dict[str, Any]) -> str:
        """Create the index, or reuse it when it holds this world; ``created``/``reused``/
        ``recreated``."""
        if not self.es.indices.exists(index=index):
            self.es.indices.create(index=index, mappings=mapping)
            return "created"
        current = self.es.indices.get_mapping(index=index)
        body = dict(current).get(index, {})
        found = body.get("mappings", {}).get("_meta", {}).get("dabench", {}).get("world_hash")
        if found == self.world.world_hash and not self.recreate:
            return "reused"
        if not self.recreate:
            raise UserInputError(
                f"index {index} holds another world ({str(found)[:12]}, this one is "
                f"{self.world.world_hash[:12]}); pass --recreate to replace it"
            )
        self.es.indices.delete(index=index)
        self.es.indices.create(index=index, mappings=mapping)
        return "recreated"

    def _bulk(self, index: str, docs: Iterator[tuple[str, dict[str, Any]]], total: int) -> int:
        return bulk_write(
            self.es, index, docs, chunk_size=self.chunk_size,
            on_written=lambda n: self.progress(index, n, total), error=ExportError,
        )  # fmt: skip

    def export(self) -> ExportSummary:
        """Index every table and the knowledge index."""
        t0 = time.perf_counter()
        summary = ExportSummary(world_hash=self.world.world_hash)
        con = self.world.connect()
        try:
            con.execute("SET enable_progress_bar = false")
            for ds in self.datasets:
                index = index_name(self.prefix, ds.id)
                action = self._prepare(index, table_mapping(ds, self.world))
                rows = ((str(i), row) for i, row in enumerate(table_rows(con, ds)))
                written = self._bulk(index, rows, ds.row_count)
                summary.indices.append(IndexResult(index, written, action))
        finally:
            con.close()
        index = index_name(self.prefix, KNOWLEDGE_INDEX)
        action = self._prepare(index, knowledge_mapping(self.world))
        docs = knowledge_docs(self.world)
        written = self._bulk(index, iter(docs), len(docs))
        summary.indices.append(IndexResult(index, written, action))
        summary.elapsed_s = time.perf_counter() - t0
        return summary


def export_world(
    world: World,
    client: Elasticsearch,
    *,
    prefix: str = "dabench-",
    recreate: bool = False,
    chunk_size: int = 500,
    progress: ProgressHook | None = None,
    datasets: Sequence[str] | None = None,
) -> ExportSummary:
    """Export ``world`` (every dataset, or only ``datasets``, plus the knowledge index) into
    the cluster behind ``client`` (see the module docstring)."""
    exporter = ElasticsearchExporter(
        client, world, prefix=prefix, recreate=recreate, chunk_size=chunk_size,
        progress=progress, datasets=datasets,
    )  # fmt: skip
    return exporter.export()


def run_elasticsearch_export(
    world_dir: Path,
    url: str,
    *,
    api_key: str | None,
    prefix: str,
    recreate: bool,
    chunk_size: int,
    datasets: list[str] | None,
    verify_certs: bool,
) -> None:
    """Index the world's tables (explicit mappings, catalog in _meta) and its knowledge pages
    into Elasticsearch; re-runs overwrite the same documents."""
    require_elasticsearch()
    from elastic_transport import TransportError
    from elasticsearch import ApiError

    world = load_world(world_dir)
    client = connect_elasticsearch(url, api_key, verify_certs=verify_certs)
    console = Console(stderr=True)
    chosen = [d for d in world.catalog.datasets if not datasets or d.id in datasets]
    total = sum(d.row_count for d in chosen) + len(knowledge_docs(world))
    bars = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=console,
    )  # fmt: skip
    done: dict[str, int] = {}
    try:
        with bars:
            bar = bars.add_task("exporting", total=total)

            def hook(index: str, written: int, _expected: int) -> None:
                done[index] = written
                bars.update(bar, completed=sum(done.values()), description=index)

            summary = export_world(
                world, client, prefix=prefix, recreate=recreate, chunk_size=chunk_size,
                progress=hook, datasets=datasets or None,
            )  # fmt: skip
    except ApiError as exc:
        raise ExportError(f"elasticsearch {url}: {describe_api_error(exc)}") from exc
    except TransportError as exc:
        raise ExportError(f"elasticsearch {url}: {exc}") from exc
    finally:
        client.close()
    actions = {a: sum(1 for i in summary.indices if i.action == a) for a in
               ("created", "reused", "recreated")}  # fmt: skip
    stdout_console().print(
        f"exported world {summary.world_hash[:16]} to {url}: {len(summary.indices)} indices "
        f"({', '.join(f'{n} {a}' for a, n in actions.items() if n)}), {summary.docs:,} documents "
        f"in {summary.elapsed_s:.1f}s",
        highlight=False,
        soft_wrap=True,
    )
