"""Fixtures of the Elastic tests: the seed-930 world (built once) and the fake servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.elastic.fake_elasticsearch import FakeElasticsearch


@pytest.fixture(scope="session")
def world_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """World 930 at scale 1, built once per session."""
    from dabench.world import build_world

    out = tmp_path_factory.mktemp("elastic-world") / "w930"
    build_world(930, 1, out)
    return out


@pytest.fixture
def fake_es() -> Iterator[FakeElasticsearch]:
    """A fresh fake Elasticsearch requiring the API key ``es-key``."""
    with FakeElasticsearch(api_key="es-key") as server:
        yield server
