"""Warehouse backends of the reference platform behind one interface (:class:`Warehouse`).

- :mod:`.duckdb_backend`: the world's own ``warehouse.duckdb`` (the default).
- :mod:`.postgres_backend`: a world loaded into PostgreSQL (``dabench world export
  --postgres``), served through a read-only role (``platform serve --warehouse DSN``).
"""

from __future__ import annotations

from pathlib import Path

from dabench.defaults import DEFAULT_SQL_THREADS, POSTGRES_PREFIXES
from dabench.platform.warehouse.base import (
    DIALECT_NAMES,
    QueryResult,
    SqlDialect,
    TableColumns,
    Warehouse,
    jsonable,
)
from dabench.platform.warehouse.duckdb_backend import (
    DuckDBWarehouse,
    WarehouseLimits,
    read_only_config,
)


def open_warehouse(
    duckdb_path: Path,
    *,
    dsn: str | None = None,
    threads: int = DEFAULT_SQL_THREADS,
    limits: WarehouseLimits | None = None,
    expected_tables: frozenset[str] | None = None,
    world_hash: str | None = None,
) -> Warehouse:
    """The PostgreSQL warehouse at ``dsn`` when given, else the DuckDB file ``duckdb_path``.

    ``expected_tables`` (the world catalog's ``schema.table`` ids) limits what a PostgreSQL
    warehouse exposes and must all be there; ``world_hash`` must match the one the export
    recorded."""
    if dsn is None:
        return DuckDBWarehouse(duckdb_path, threads, limits)
    from dabench.platform.warehouse.postgres_backend import PostgresWarehouse

    return PostgresWarehouse(dsn, expected_tables=expected_tables, world_hash=world_hash)


__all__ = [
    "DEFAULT_SQL_THREADS",
    "DIALECT_NAMES",
    "POSTGRES_PREFIXES",
    "DuckDBWarehouse",
    "QueryResult",
    "SqlDialect",
    "TableColumns",
    "Warehouse",
    "WarehouseLimits",
    "jsonable",
    "open_warehouse",
    "read_only_config",
]
