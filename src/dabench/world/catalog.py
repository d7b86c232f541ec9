"""Assemble the catalog from the dataset declarations and the built warehouse."""

from __future__ import annotations

from datetime import date

import duckdb

from dabench.world.constants import END_DATE
from dabench.world.datasets import DatasetSpec
from dabench.world.glossary import GLOSSARY
from dabench.world.model import Catalog, ColumnMeta, DatasetMeta, LineageEdge
from dabench.world.queries import curated_queries


class CatalogMismatchError(RuntimeError):
    """A dataset declaration and the table the warehouse holds disagree."""


def dataset_meta(con: duckdb.DuckDBPyConnection, spec: DatasetSpec) -> DatasetMeta:
    """Catalog record of one built table: declared text plus types, rows and freshness."""
    schema, table = spec.id.split(".")
    types = con.execute(
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
        [schema, table],
    ).fetchall()
    actual = [name for name, _ in types]
    if actual != list(spec.columns):
        raise CatalogMismatchError(
            f"{spec.id}: warehouse columns {actual} != declared columns {list(spec.columns)}"
        )
    row = con.execute(f"SELECT count(*) FROM {spec.id}").fetchone()
    rows = int(row[0]) if row else 0
    last_loaded = END_DATE
    if spec.freshness_sql:
        fresh = con.execute(spec.freshness_sql).fetchone()
        if fresh is None or not isinstance(fresh[0], date):
            raise CatalogMismatchError(f"{spec.id}: freshness_sql did not return a date")
        last_loaded = fresh[0]
    columns = [
        ColumnMeta(
            name=name,
            type=str(dtype),
            description=spec.columns[name].description,
            unit=spec.columns[name].unit,
            tags=list(spec.columns[name].tags),
            glossary_terms=list(spec.columns[name].glossary),
        )
        for name, dtype in types
    ]
    return DatasetMeta(
        id=spec.id,
        domain=spec.domain,
        kind=spec.kind,
        title=spec.title,
        description=spec.description,
        owner=spec.owner,
        tags=list(spec.tags),
        glossary_terms=list(spec.glossary),
        columns=columns,
        row_count=rows,
        last_loaded=last_loaded,
        deprecated=spec.deprecated,
        replaced_by=spec.replaced_by,
        upstream=list(spec.upstream),
    )


def build_catalog(datasets: list[DatasetMeta], specs: list[DatasetSpec]) -> Catalog:
    """The whole catalog: datasets sorted by id, glossary, curated queries, lineage."""
    transforms = {s.id: s.transform for s in specs}
    lineage = [
        LineageEdge(upstream=up, downstream=d.id, transform=transforms.get(d.id, ""))
        for d in datasets
        for up in d.upstream
    ]
    return Catalog(
        datasets=sorted(datasets, key=lambda d: d.id),
        glossary=sorted(GLOSSARY, key=lambda g: g.id),
        curated_queries=sorted(curated_queries(), key=lambda q: q.id),
        lineage=sorted(lineage, key=lambda e: (e.upstream, e.downstream)),
    )
