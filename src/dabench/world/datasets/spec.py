"""How a dataset is declared: the SQL that fills it and the catalog text that describes it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dabench.world.model import DatasetKind


@dataclass(frozen=True)
class Col:
    """Catalog text of one column (its type comes from the warehouse)."""

    description: str
    unit: str | None = None
    tags: tuple[str, ...] = ()
    glossary: tuple[str, ...] = ()


@dataclass(frozen=True)
class DatasetSpec:
    """One warehouse table: ``CREATE TABLE <id> AS SELECT <columns> FROM (<select>) ORDER BY
    <order_by>``; the select may carry extra columns used only for ordering."""

    id: str
    domain: str
    kind: DatasetKind
    title: str
    description: str
    owner: str
    columns: dict[str, Col]
    select: str
    order_by: str
    tags: tuple[str, ...] = ()
    glossary: tuple[str, ...] = ()
    upstream: tuple[str, ...] = ()
    transform: str = ""
    """How the dataset is derived from ``upstream`` (lineage edge text)."""
    deprecated: bool = False
    replaced_by: str | None = None
    freshness_sql: str | None = None
    """SQL returning the last date with data; None means the world's last day."""
    more_chunks: tuple[str, ...] = ()
    """Selects of the table's further rows, appended in order after ``select`` (each with
    ``INSERT INTO <id> SELECT <columns> FROM (<chunk>) ORDER BY <order_by>``): a fact table
    larger than memory is generated a key range at a time, so no statement sorts or numbers
    the whole table. Each chunk's rows sort after every row of the chunks before it."""


@dataclass(frozen=True)
class Helper:
    """A temporary table the generator needs but the warehouse does not keep."""

    name: str
    select: str


def chunk_bounds(total: int, per_chunk: int) -> list[tuple[int, int]]:
    """``[(lo, hi), ...]`` half-open key ranges of at most ``per_chunk`` keys covering
    ``0..total-1`` (one range, ``(0, total)``, when the keys fit in one chunk)."""
    return [(lo, min(lo + per_chunk, total)) for lo in range(0, max(total, 1), per_chunk)]


def values_sql(columns: Sequence[str], rows: Sequence[tuple[object, ...]]) -> str:
    """A ``SELECT * FROM (VALUES ...)`` over literal rows (str, int, float, None)."""
    body = ",\n".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)
    return f"SELECT * FROM (VALUES {body}) AS t({', '.join(columns)})"


def literal(value: object) -> str:
    """A SQL literal for a Python scalar."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"
