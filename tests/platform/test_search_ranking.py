"""The ``search`` ranking modes: bm25 (default), embedding and hybrid, over the session world."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from platform_helpers import (
    call,
    launch_platform,
    mcp_client,
    serve_without_module,
    stop_platform,
    wait_healthy,
)

from dabench.errors import UserInputError
from dabench.platform.knowledge.view import KnowledgeView
from dabench.platform.profile import load_profile, parse_profile
from dabench.platform.search.embedding import MODEL_NAME, load_embedder
from dabench.platform.search.engine import SearchEngine, build_docs, tokenize
from dabench.platform.search.ranking import MIN_SIMILARITY, RRF_K
from dabench.platform.state import Insight, StateStore
from dabench.platform.storage import Database
from dabench.platform.world_content import load_world_content

KINDS = ["dataset", "column", "glossary", "knowledge_page", "curated_query"]
PARAPHRASE = "removed clients"
"""Shares no token with its target: the column whose 'X' marks an erased customer."""
TARGET = "column:customers.customers.row_state"

HYBRID_PROFILE = {
    "name": "hybrid-search",
    "tools": ["platform_info", "sql_query", "search", "fetch"],
    "search": {"kinds": KINDS, "ranking": "hybrid"},
}


def _view(world_dir: Path, db: Path) -> KnowledgeView:
    content = load_world_content(world_dir)
    return KnowledgeView(content.catalog, content.pages, StateStore(Database(sqlite_path=db)))


@pytest.fixture(scope="module")
def view(world_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> KnowledgeView:
    """The session world's effective knowledge with an empty state."""
    return _view(world_dir, tmp_path_factory.mktemp("ranking") / "state.sqlite")


@pytest.fixture(scope="module")
def engines(view: KnowledgeView) -> dict[str, SearchEngine]:
    """One engine per ranking mode over the same view."""
    return {mode: SearchEngine(view, KINDS, mode) for mode in ("bm25", "embedding", "hybrid")}


def _ids(engine: SearchEngine, query: str, limit: int = 10) -> list[str]:
    return [r["id"] for r in engine.search(query, KINDS, limit, "u", [])]


def test_paraphrase_found_by_embedding_and_hybrid_not_bm25(
    engines: dict[str, SearchEngine], view: KnowledgeView
) -> None:
    target = next(d for d in build_docs(view, [], set(KINDS)) if d.id == TARGET)
    assert "erased" in target.text
    assert not set(tokenize(PARAPHRASE)) & set(tokenize(target.title + " " + target.text))
    assert TARGET not in _ids(engines["bm25"], PARAPHRASE, 100)
    assert _ids(engines["embedding"], PARAPHRASE)[0] == TARGET
    assert TARGET in _ids(engines["hybrid"], PARAPHRASE, 3)


def test_score_meaning_per_mode(engines: dict[str, SearchEngine]) -> None:
    query = "How many completed orders were placed in the first quarter of fiscal year 2025?"
    for mode, engine in engines.items():
        results = engine.search(query, KINDS, 100, "u", [])
        assert results, mode
        scores = [r["score"] for r in results]
        assert scores == sorted(scores, reverse=True)
        assert all(round(s, 6) == s for s in scores)
        if mode == "embedding":
            assert all(MIN_SIMILARITY <= s <= 1.0 for s in scores)
        if mode == "hybrid":
            assert all(0 < s <= 2 / (RRF_K + 1) + 1e-6 for s in scores)
        ids = [r["id"] for r in results]
        assert "page:fiscal-calendar" in ids[:10], (mode, ids[:10])
    assert engines["embedding"].search("", KINDS, 10, "u", []) == []
    assert engines["bm25"].embedding_model is None
    model = engines["hybrid"].embedding_model
    assert model is not None and model.startswith(MODEL_NAME + "@sha256:") and len(model) > 70


def test_kinds_filter_applies_to_every_mode(engines: dict[str, SearchEngine]) -> None:
    for mode, engine in engines.items():
        results = engine.search("fiscal year quarter", ["glossary"], 10, "u", [])
        assert results and {r["kind"] for r in results} == {"glossary"}, mode


def test_deterministic_within_and_across_engines(
    engines: dict[str, SearchEngine], world_dir: Path, tmp_path: Path
) -> None:
    fresh = _view(world_dir, tmp_path / "state.sqlite")
    queries = [PARAPHRASE, "revenue in US dollars", "duplicate web events"]
    for mode in ("embedding", "hybrid"):
        other = SearchEngine(fresh, KINDS, mode)
        for query in queries:
            first = json.dumps(engines[mode].search(query, KINDS, 20, "u", []))
            assert first == json.dumps(engines[mode].search(query, KINDS, 20, "u", []))
            assert first == json.dumps(other.search(query, KINDS, 20, "v", []))


def test_rebuild_after_memory_embeds_only_the_new_doc(world_dir: Path, tmp_path: Path) -> None:
    view = _view(world_dir, tmp_path / "state.sqlite")
    kinds = [*KINDS, "memory"]
    engine = SearchEngine(view, kinds, "hybrid")
    embedder = load_embedder("hybrid")
    n_docs = engine.warm("teacher", [])
    now = datetime.now(UTC)
    memory = Insight(
        id="ins_test01",
        type="caveat",
        content="Clients wiped from the register keep a tombstone row flagged X.",
        confidence=0.9,
        status="pending",
        captured_by="teacher",
        created_at=now,
        updated_at=now,
    )
    view.state.add_insight(memory)
    before = embedder.texts_embedded
    assert engine.warm("teacher", [memory]) == n_docs + 1
    assert embedder.texts_embedded - before == 1
    assert engine.warm("learner", [memory]) == n_docs + 1
    assert embedder.texts_embedded - before == 1
    ids = [r["id"] for r in engine.search(PARAPHRASE, kinds, 10, "teacher", [memory])]
    assert "memory:ins_test01" in ids


def test_profile_ranking_field_and_unchanged_hashes() -> None:
    a2 = load_profile("a2")
    assert a2.search.ranking == "bm25"
    assert "ranking" not in a2.canonical_json()
    assert "embedding_model" not in a2.canonical_json()
    for name in ("a0", "a1", "a3"):
        assert "embedding_model" not in load_profile(name).canonical_json()
    data = yaml.safe_load(yaml.safe_dump(a2.model_dump(mode="json")))
    data["search"]["ranking"] = "bm25"
    assert parse_profile(yaml.safe_dump(data), "x.yaml").profile_hash == a2.profile_hash
    data["search"]["ranking"] = "hybrid"
    assert parse_profile(yaml.safe_dump(data), "x.yaml").profile_hash != a2.profile_hash
    data["search"]["embedding_model"] = "wordllama-l2-supercat-256"
    hybrid_hash = parse_profile(yaml.safe_dump(data), "x.yaml").profile_hash
    data["search"]["embedding_model"] = "all-minilm-l6-v2"
    assert parse_profile(yaml.safe_dump(data), "x.yaml").profile_hash != hybrid_hash
    data["search"]["ranking"] = "bm25"
    with pytest.raises(UserInputError, match="embedding_model 'all-minilm-l6-v2' is ignored"):
        parse_profile(yaml.safe_dump(data), "x.yaml")
    data["search"]["embedding_model"] = "wordllama-l2-supercat-256"
    assert parse_profile(yaml.safe_dump(data), "x.yaml").profile_hash == a2.profile_hash
    data["search"]["ranking"] = "dense"
    with pytest.raises(UserInputError, match=r"x\.yaml: invalid profile: search\.ranking"):
        parse_profile(yaml.safe_dump(data), "x.yaml")
    data["search"]["ranking"] = "embedding"
    data["search"]["embedding_model"] = "bert"
    with pytest.raises(UserInputError, match=r"search\.embedding_model"):
        parse_profile(yaml.safe_dump(data), "x.yaml")


def test_missing_extra_fails_at_platform_start(
    world_dir: Path, auth_file: Path, tmp_path: Path
) -> None:
    proc = serve_without_module("wordllama", HYBRID_PROFILE, world_dir, auth_file, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert (
        "error: search.ranking 'hybrid' needs the embeddings extra: "
        "pip install 'dabench[embeddings]'" in proc.stderr
    )


async def test_hybrid_profile_served_end_to_end(
    world_dir: Path, auth_file: Path, tmp_path: Path
) -> None:
    profile = tmp_path / "hybrid.yaml"
    profile.write_text(yaml.safe_dump(HYBRID_PROFILE))
    platform = wait_healthy(launch_platform(world_dir, str(profile), auth_file, tmp_path / "s"))
    try:
        async with mcp_client(platform) as client:
            is_error, info = await call(client, "platform_info")
            assert not is_error, info
            assert info["features"]["search_ranking"] == "hybrid"
            assert info["features"]["embedding_model"].startswith(
                "wordllama/l2_supercat_256@sha256:"
            )
            sid = info["session_id"]
            args = {"session_id": sid, "query": PARAPHRASE, "limit": 5}
            is_error, body = await call(client, "search", args)
            assert not is_error, body
            ids = [r["id"] for r in body["results"]]
            assert TARGET in ids[:3]
            scores = [r["score"] for r in body["results"]]
            assert scores == sorted(scores, reverse=True) and len(ids) == 5
    finally:
        assert stop_platform(platform) == 0
