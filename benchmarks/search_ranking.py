"""Retrieval quality and cost of the ``search`` ranking modes (bm25, embedding, hybrid).

The embedding and hybrid rows are measured with each embedding model: the default static
WordLlama model and, when the ``embeddings-minilm`` extra is installed, all-MiniLM-L6-v2.

For every trap of the world, the trap's question is searched and the rank of its FIRST fact
location (``knowledge:<id>`` -> ``page:<id>``, ``glossary:<id>`` -> ``glossary:<id>``,
``catalog:<ds>`` -> ``dataset:<ds>``, ``catalog:<ds>.<col>`` -> ``column:<ds>.<col>``) gives
hit@1, hit@5 and MRR (reciprocal rank, 0 when not returned). A second query set paraphrases
one question per trap class without its key terms; the paraphrases are HAND-WRITTEN below
(deliberately avoiding the words the fact documents use, so they favour semantic ranking)
and are scored against the first fact location of the first trap of that class. Also: p50
latency of one search call and the index build time per mode. Run from the repo root:

    python3 -m benchmarks.search_ranking [--world DIR] [--repeats 20]

Without ``--world`` it builds world 930 at scale 1 into a temporary directory.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from dabench.platform.knowledge.view import KnowledgeView
from dabench.platform.profile import (
    DEFAULT_EMBEDDING_MODEL,
    EmbeddingModelName,
    SearchRanking,
    load_profile,
)
from dabench.platform.search.embedding import MODELS, load_embedder
from dabench.platform.search.engine import SearchEngine
from dabench.platform.search.ranking import RRF_K
from dabench.platform.state import StateStore
from dabench.platform.storage import Database
from dabench.platform.world_content import load_world_content
from dabench.world import build_world

MODES: tuple[SearchRanking, ...] = ("bm25", "embedding", "hybrid")
SHORT: dict[EmbeddingModelName, str] = {
    "wordllama-l2-supercat-256": "wordllama",
    "all-minilm-l6-v2": "minilm",
}
"""Row labels of the embedding models."""
EXTRA_PACKAGE: dict[EmbeddingModelName, str] = {
    "wordllama-l2-supercat-256": "wordllama",
    "all-minilm-l6-v2": "sentence_transformers",
}
"""A package whose absence means the model's extra is not installed."""
USER = "bench"

PARAPHRASES: dict[str, str] = {
    "cents_units": "On average, what does one of the items we sell cost, in whole currency?",
    "net_revenue": "How much money did the business bring in during 2024?",
    "fiscal_calendar": (
        "How many finished purchases happened in the opening three months of the "
        "company's 2025 accounting period?"
    ),
    "freshness_cutoff": "How much did we earn in the eleventh month of 2025?",
    "tier_definition": "How many of our most important clients are there?",
    "deprecated_table": "How many purchases were fulfilled during 2025?",
    "timezone_change": "In 2023, at what clock time was our website busiest, by head-office clock?",
    "duplicate_events": "How often did shoppers put something in their basket online in 2025?",
    "test_accounts": "How many purchases, whatever their state, did we receive in 2024?",
    "soft_deleted": "How big is our client base right now?",
    "currency_conversion": "How much did we bill our resellers in 2025, in American money?",
}
"""Hand-written paraphrases, one per trap class, without the question's key terms."""


def search_id(location: str) -> str:
    """A trap fact location -> the ``search`` result id that holds it."""
    source, _, ident = location.partition(":")
    if source == "knowledge":
        return f"page:{ident}"
    if source == "glossary":
        return f"glossary:{ident}"
    if source == "catalog":
        return f"column:{ident}" if ident.count(".") == 2 else f"dataset:{ident}"
    raise ValueError(f"unknown fact location {location!r}")


def queries(world_dir: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(question, target id) per trap, and (paraphrase, target id) per trap class."""
    traps: list[dict[str, Any]] = json.loads((world_dir / "world.json").read_text())["traps"]
    original = [(t["question"], search_id(t["fact_locations"][0])) for t in traps]
    paraphrased: list[tuple[str, str]] = []
    for trap_class, text in PARAPHRASES.items():
        first = next(t for t in traps if t["trap_class"] == trap_class)
        paraphrased.append((text, search_id(first["fact_locations"][0])))
    missing = sorted({t["trap_class"] for t in traps} - set(PARAPHRASES))
    if missing:
        raise SystemExit(f"no paraphrase for trap classes {missing}")
    return original, paraphrased


def quality(engine: SearchEngine, kinds: list[str], qs: list[tuple[str, str]]) -> list[float]:
    """hit@1, hit@5, MRR of the target ids."""
    hit1 = hit5 = rr = 0.0
    for text, target in qs:
        ids = [doc.id for _, doc in engine.rank(text, kinds, USER, [])]
        rank = ids.index(target) + 1 if target in ids else 0
        hit1 += rank == 1
        hit5 += 0 < rank <= 5
        rr += 1.0 / rank if rank else 0.0
    n = len(qs)
    return [hit1 / n, hit5 / n, rr / n]


def main() -> None:
    """Build or open a world, then print the quality and cost table per ranking mode."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--world", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=20, help="timed passes over all queries")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="seconds: 1 timed pass, the default embedding model only (no torch load)",
    )
    opts = parser.parse_args()
    if opts.quick:
        opts.repeats = 1
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        world_dir = opts.world
        if world_dir is None:
            world_dir = tmp / "w930"
            build_world(930, 1, world_dir)
        content = load_world_content(world_dir)
        original, paraphrased = queries(world_dir)
        kinds = list(load_profile("a3").search.kinds)
        models: list[tuple[EmbeddingModelName, str, float]] = []
        absent: list[EmbeddingModelName] = []
        skipped = [m for m in MODELS if opts.quick and m != DEFAULT_EMBEDDING_MODEL]
        for model in MODELS:
            if model in skipped:
                continue
            if importlib.util.find_spec(EXTRA_PACKAGE[model]) is None:
                absent.append(model)
                continue
            t0 = time.perf_counter()
            embedder = load_embedder("embedding", model)
            models.append((model, embedder.model_id, time.perf_counter() - t0))
        arms: list[tuple[str, SearchRanking, EmbeddingModelName]] = [
            ("bm25", "bm25", "wordllama-l2-supercat-256")
        ]
        for model, _, _ in models:
            arms += [(f"{m}/{SHORT[model]}", m, model) for m in MODES if m != "bm25"]
        rows = []
        for label, mode, model in arms:
            state = StateStore(Database(sqlite_path=tmp / f"state-{label.replace('/', '-')}.db"))
            view = KnowledgeView(content.catalog, content.pages, state)
            t0 = time.perf_counter()
            engine = SearchEngine(view, kinds, mode, model)
            n_docs = engine.warm(USER, [])
            build_ms = (time.perf_counter() - t0) * 1000.0
            q_orig = quality(engine, kinds, original)
            q_para = quality(engine, kinds, paraphrased)
            latencies = []
            for _ in range(opts.repeats):
                for text, _target in original + paraphrased:
                    t0 = time.perf_counter()
                    engine.search(text, kinds, 10, USER, [])
                    latencies.append((time.perf_counter() - t0) * 1000.0)
            rows.append((label, q_orig, q_para, statistics.median(latencies), build_ms))
    print(f"\nworld {content.world_hash[:12]}, {n_docs} documents, kinds {kinds}")
    for model, model_id, load_s in models:
        print(
            f"{SHORT[model]}: {model_id}, load (first use in the process) "
            f"{load_s * 1000.0:.0f} ms, min similarity {MODELS[model].min_similarity}"
        )
    for model in absent:
        print(f"{SHORT[model]}: not installed (extra for search.embedding_model {model!r})")
    for model in skipped:
        print(f"{SHORT[model]}: not measured (--quick)")
    print(f"RRF k {RRF_K}")
    print(
        f"queries: {len(original)} trap questions; {len(paraphrased)} HAND-WRITTEN paraphrases "
        "(one per trap class, key terms removed on purpose)"
    )
    head = f"{'mode/model':<19}{'q hit@1':>9}{'q hit@5':>9}{'q MRR':>8}"
    head += f"{'p hit@1':>9}{'p hit@5':>9}{'p MRR':>8}{'p50 ms':>9}{'build ms':>10}"
    print(head)
    for mode, qo, qp, p50, build in rows:
        cells = "".join(f"{v:>9.3f}" if i != 2 else f"{v:>8.3f}" for i, v in enumerate(qo))
        cells += "".join(f"{v:>9.3f}" if i != 2 else f"{v:>8.3f}" for i, v in enumerate(qp))
        print(f"{mode:<19}{cells}{p50:>9.3f}{build:>10.1f}")
    print("q = trap questions, p = paraphrases; build = index build of a fresh engine")


if __name__ == "__main__":
    main()
