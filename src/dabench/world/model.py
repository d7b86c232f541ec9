"""The records of a world on disk: catalog, knowledge pages, traps and the world manifest.

A built world is a directory::

    DIR/
      warehouse.duckdb      the warehouse tables, one DuckDB schema per business domain
      catalog.json          a :class:`Catalog` (datasets, columns, glossary, queries, lineage)
      knowledge/<id>.md     knowledge pages: YAML front matter + markdown body
      world.json            a :class:`WorldManifest` (version, seed, scale, file hashes, traps)

Dataset ids are the fully qualified table names used in SQL (``sales.orders``); column ids
are ``<dataset id>.<column>``. These ids are what discovery tasks are graded against.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DatasetKind = Literal["fact", "dimension", "staging", "aggregate", "legacy", "reference"]
"""What role a dataset plays: a near-duplicate is a ``staging`` or ``legacy`` copy, the fast
path for common questions is an ``aggregate``."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ColumnMeta(_Record):
    """One column of a dataset, as the catalog describes it."""

    name: str
    """Column name in the warehouse."""
    type: str
    """DuckDB type name, e.g. ``BIGINT`` or ``DATE``."""
    description: str
    """Human description; may hold a deciding trap fact (e.g. the unit)."""
    unit: str | None = None
    """Unit of measure when the column is a quantity (``USD cents``, ``EUR``, ``count``)."""
    tags: list[str] = Field(default_factory=list)
    glossary_terms: list[str] = Field(default_factory=list)
    """Ids of glossary terms this column is linked to."""


class DatasetMeta(_Record):
    """One dataset (table) of the warehouse with its catalog metadata."""

    id: str
    """Fully qualified table name, ``<schema>.<table>``; the catalog id used everywhere."""
    domain: str
    """Business domain (``sales``, ``customers``, ``finance``, ...)."""
    kind: DatasetKind
    title: str
    """Short human title."""
    description: str
    owner: str
    tags: list[str] = Field(default_factory=list)
    glossary_terms: list[str] = Field(default_factory=list)
    columns: list[ColumnMeta]
    row_count: int
    last_loaded: date
    """Freshness: the last date for which the dataset holds data."""
    deprecated: bool = False
    replaced_by: str | None = None
    """Id of the dataset to use instead when ``deprecated``."""
    upstream: list[str] = Field(default_factory=list)
    """Ids of datasets this one is derived from (lineage)."""


class GlossaryTerm(_Record):
    """A business term with its agreed definition."""

    id: str
    name: str
    definition: str
    synonyms: list[str] = Field(default_factory=list)
    related_datasets: list[str] = Field(default_factory=list)


class CuratedQuery(_Record):
    """A named, reviewed SQL query that answers a common question."""

    id: str
    name: str
    description: str
    sql: str
    datasets: list[str]


class LineageEdge(_Record):
    """``upstream`` feeds ``downstream``."""

    upstream: str
    downstream: str
    transform: str = ""


class KnowledgePage(_Record):
    """A markdown knowledge page (policy, guide, definition). Stored as ``knowledge/<id>.md``."""

    id: str
    title: str
    tags: list[str] = Field(default_factory=list)
    related_datasets: list[str] = Field(default_factory=list)
    reviewed: date | None = None
    """When the owning team last reviewed the page. Where two pages disagree, the one reviewed
    last governs (knowledge page ``documentation-conventions``); pages are never deleted."""
    body: str
    """Markdown body without the front matter."""


def knowledge_page(
    id: str, title: str, tags: list[str], related: list[str], reviewed: date, body: str
) -> KnowledgePage:
    """A generated page: ``body`` stripped and ended by one newline."""
    return KnowledgePage(
        id=id,
        title=title,
        tags=tags,
        related_datasets=related,
        reviewed=reviewed,
        body=body.strip() + "\n",
    )


class Catalog(_Record):
    """Everything the platform knows about the warehouse besides the data itself."""

    datasets: list[DatasetMeta]
    glossary: list[GlossaryTerm]
    curated_queries: list[CuratedQuery]
    lineage: list[LineageEdge]


class Trap(_Record):
    """A planted knowledge trap: a question with a plausible naive answer and a correct one.

    The deciding fact lives only in descriptions or knowledge pages, never in a table or
    column name. Both answers are computed by SQL when the world is built.
    """

    id: str
    trap_class: str
    """One of the trap classes documented in docs/world.md (e.g. ``cents_units``)."""
    question: str
    """A natural question whose answer falls into the trap."""
    deciding_fact: str
    """The fact that separates the correct from the naive answer, in words."""
    fact_locations: list[str]
    """Where the fact lives: ``catalog:<dataset>[.<column>]``, ``knowledge:<page id>``,
    ``glossary:<term id>``."""
    correct_sql: str
    naive_sql: str
    correct_answer: float
    naive_answer: float
    tolerance_rel: float = 0.01
    """Relative tolerance a grader applies to this trap's number."""
    control: bool = False
    """A control trap: its deciding fact can be worked out from the data alone (magnitudes,
    repeated keys, a table's last date), so it measures the analyst's diligence rather than
    the platform. Every other trap's fact is documented but not derivable from the data."""


class WorldManifest(_Record):
    """``world.json``: identifies a built world and everything planted in it."""

    generator_version: str
    seed: int
    scale: int
    files: dict[str, str]
    """Relative path -> SHA-256 hex of every file of the world (except world.json)."""
    world_hash: str
    """SHA-256 over the sorted ``path:sha`` lines of ``files``; the world's identity."""
    traps: list[Trap]
    table_rows: dict[str, int]
    """Dataset id -> row count."""
    duckdb_version: str | None = None
    """DuckDB version that wrote the warehouse; byte identity holds for one DuckDB version."""
    policies_sha256: str | None = None
    """SHA-256 of ``policies.yaml`` (the policies as data), which is not in :attr:`files`, so
    that adding it left every world's hash as it was; ``None``: a world built before it."""
