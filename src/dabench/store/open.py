"""Choosing a results store from the command line: ``--store duckdb:PATH`` (the default,
``duckdb:runs/results.duckdb``) or ``--elasticsearch URL``."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from dabench.defaults import DEFAULT_STORE as DEFAULT_STORE
from dabench.elastic import connect_elasticsearch
from dabench.errors import UserInputError
from dabench.store.duckdb_store import DuckDBStore
from dabench.store.es_store import ElasticsearchStore
from dabench.store.records import ArmStatRecord, StoredRun


class ResultsStore(Protocol):
    """What every results store does."""

    def publish(self, stored: StoredRun) -> dict[str, int]:
        """Write one run (idempotent); documents written per kind."""
        ...

    def arm_stats(self) -> list[ArmStatRecord]:
        """Every published arm statistic, oldest run first."""
        ...


def open_store(
    store: str | None,
    elasticsearch: str | None,
    *,
    api_key: str | None = None,
    prefix: str = "dabench-results-",
) -> tuple[ResultsStore, str]:
    """The store named on the command line and a label for messages."""
    if store and elasticsearch:
        raise UserInputError("--store and --elasticsearch name two stores: give one")
    if elasticsearch:
        client = connect_elasticsearch(elasticsearch, api_key)
        return ElasticsearchStore(client, prefix=prefix), f"elasticsearch {elasticsearch}"
    spec = store or DEFAULT_STORE
    kind, sep, rest = spec.partition(":")
    if kind != "duckdb" or not sep or not rest:
        raise UserInputError(
            f"--store {spec!r}: expected duckdb:PATH (or --elasticsearch URL for Elasticsearch)"
        )
    path = Path(rest).expanduser()
    return DuckDBStore(path), f"duckdb {path}"
