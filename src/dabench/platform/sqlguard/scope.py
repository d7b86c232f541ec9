"""What a query may reference (no parser imported: the platform's main process needs the
scope, its SQL workers the guard)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class SqlScope:
    """What a query may reference: the warehouse's catalog name and its tables."""

    catalog: str
    """DuckDB's name of the warehouse database (``warehouse``)."""
    tables: frozenset[str]
    """``schema.table``, lower case."""
    dialect: Literal["duckdb", "postgres"] = "duckdb"
    """The engine's SQL dialect: which parsers and function allowlist the guard uses."""

    @property
    def schemas(self) -> frozenset[str]:
        """The schemas that hold the tables."""
        return frozenset(t.split(".", 1)[0] for t in self.tables)
