"""The deterministic world: warehouse, catalog, knowledge pages and planted traps.

Public API::

    build_world(seed, scale, out, *, force=False, progress=False) -> WorldManifest
    load_world(path, *, verify=False) -> World
    connect_warehouse(path, *, read_only=True) -> duckdb.DuckDBPyConnection
    ensure_world(seed, scale, cache_dir) -> Path
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dabench.lazy import lazy_exports

if TYPE_CHECKING:
    from dabench.world.build import build_world
    from dabench.world.cache import ensure_world
    from dabench.world.constants import GENERATOR_VERSION
    from dabench.world.files import CATALOG_FILE, KNOWLEDGE_DIR, MANIFEST_FILE, WAREHOUSE_FILE
    from dabench.world.load import (
        World,
        WorldIntegrityError,
        load_world,
        read_manifest,
        verify_files,
    )
    from dabench.world.traps import TrapInvariantError
    from dabench.world.warehouse import OFFLINE_CONFIG, connect_warehouse

__getattr__ = lazy_exports(
    __name__,
    {
        "dabench.world.build": ["build_world"],
        "dabench.world.files": ["CATALOG_FILE", "KNOWLEDGE_DIR", "MANIFEST_FILE", "WAREHOUSE_FILE"],
        "dabench.world.cache": [
            "ensure_world",
        ],
        "dabench.world.constants": [
            "GENERATOR_VERSION",
        ],
        "dabench.world.load": [
            "World",
            "WorldIntegrityError",
            "load_world",
            "read_manifest",
            "verify_files",
        ],
        "dabench.world.traps": [
            "TrapInvariantError",
        ],
        "dabench.world.warehouse": [
            "OFFLINE_CONFIG",
            "connect_warehouse",
        ],
    },
)

__all__ = [
    "CATALOG_FILE",
    "GENERATOR_VERSION",
    "KNOWLEDGE_DIR",
    "MANIFEST_FILE",
    "OFFLINE_CONFIG",
    "WAREHOUSE_FILE",
    "TrapInvariantError",
    "World",
    "WorldIntegrityError",
    "build_world",
    "connect_warehouse",
    "ensure_world",
    "load_world",
    "read_manifest",
    "verify_files",
]
