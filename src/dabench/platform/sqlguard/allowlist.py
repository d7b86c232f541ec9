"""The committed function allowlists (``allowlist.json`` for DuckDB, ``allowlist_postgres.json``
for PostgreSQL), each loaded once."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources

DUCKDB_ALLOWLIST = "allowlist.json"
POSTGRES_ALLOWLIST = "allowlist_postgres.json"
_VERSION_KEYS = {DUCKDB_ALLOWLIST: "duckdb_version", POSTGRES_ALLOWLIST: "postgres_major_version"}


@dataclass(frozen=True)
class Allowlist:
    """Callable names a query may use, and the engine version they were reviewed for."""

    engine_version: str
    """The DuckDB version, or the PostgreSQL major version whose ``pg_proc`` it came from."""
    functions: frozenset[str]
    """Scalar, aggregate, window functions and macros (lower case, operators included)."""
    table_functions: frozenset[str]
    """Table functions (generators only)."""
    denied: dict[str, str]
    """Every other name in the engine's catalog, with the reason it is refused."""


@functools.cache
def load_allowlist(file: str = DUCKDB_ALLOWLIST) -> Allowlist:
    """Parse a packaged allowlist (:data:`DUCKDB_ALLOWLIST` or :data:`POSTGRES_ALLOWLIST`)."""
    text = resources.files("dabench.platform.sqlguard").joinpath(file).read_text(encoding="utf-8")
    data = json.loads(text)
    return Allowlist(
        engine_version=str(data[_VERSION_KEYS[file]]),
        functions=frozenset(data["functions"]),
        table_functions=frozenset(data["table_functions"]),
        denied=dict(data["denied"]),
    )
