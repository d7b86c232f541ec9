"""The committed function allowlist (``allowlist.json``), loaded once."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class Allowlist:
    """Callable names a query may use, and the DuckDB version they were reviewed for."""

    duckdb_version: str
    functions: frozenset[str]
    """Scalar, aggregate, window functions and macros (lower case, operators included)."""
    table_functions: frozenset[str]
    """Table functions (generators only)."""
    denied: dict[str, str]
    """Every other name in DuckDB's catalog, with the reason it is refused."""


@functools.cache
def load_allowlist() -> Allowlist:
    """Parse the packaged ``allowlist.json``."""
    text = (
        resources.files("dabench.platform.sqlguard")
        .joinpath("allowlist.json")
        .read_text(encoding="utf-8")
    )
    data = json.loads(text)
    return Allowlist(
        duckdb_version=str(data["duckdb_version"]),
        functions=frozenset(data["functions"]),
        table_functions=frozenset(data["table_functions"]),
        denied=dict(data["denied"]),
    )
