"""Lexical search over the effective knowledge: datasets, columns, glossary, knowledge pages,
curated queries and (when memory is on) the memories the caller may see.

Ranking is BM25 (``rank_bm25.BM25Okapi``, titles weighted x3) over a light tokenisation (lower-case
alphanumeric words, identifiers split on ``.`` and ``_``, a trailing plural ``s`` dropped).
Ties break on the result id, so equal inputs give equal rankings. The index is rebuilt when
the state version changes (a promotion or a memory) and is per user (memories differ).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from rank_bm25 import BM25Okapi

from dabench.platform.knowledge import KnowledgeView
from dabench.platform.state import Insight

_TOKEN = re.compile(r"[a-z0-9]+")
TITLE_WEIGHT = 3
"""A document's title (name, id) counts this many times in its BM25 term frequencies."""


STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "in",
        "is",
        "it",
        "its",
        "many",
        "much",
        "of",
        "on",
        "or",
        "the",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
    ]
)
"""Question words and function words: they match everything and rank nothing."""


def tokenize(text: str) -> list[str]:
    """BM25 tokens of ``text``."""
    out = []
    for tok in _TOKEN.findall(text.lower()):
        if tok in STOP_WORDS:
            continue
        if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
            tok = tok[:-1]
        out.append(tok)
    return out


@dataclass(frozen=True)
class SearchDoc:
    """One searchable item."""

    id: str
    """``<kind prefix>:<id>``, the argument ``fetch`` takes."""
    kind: str
    title: str
    text: str


KIND_PREFIX = {
    "dataset": "dataset",
    "column": "column",
    "glossary": "glossary",
    "knowledge_page": "page",
    "curated_query": "query",
    "memory": "memory",
}
PREFIX_KIND = {v: k for k, v in KIND_PREFIX.items()}


def build_docs(view: KnowledgeView, memories: list[Insight], kinds: set[str]) -> list[SearchDoc]:
    """The documents of the index, in a fixed order."""
    docs: list[SearchDoc] = []
    if "dataset" in kinds or "column" in kinds:
        for ds in view.datasets():
            if "dataset" in kinds:
                text = " ".join(
                    [ds.id, ds.title, ds.description, ds.domain, ds.kind, " ".join(ds.tags)]
                )
                docs.append(SearchDoc(f"dataset:{ds.id}", "dataset", ds.title, text))
            if "column" in kinds:
                for col in ds.columns:
                    cid = f"{ds.id}.{col.name}"
                    text = " ".join([cid, col.description, col.unit or "", " ".join(col.tags)])
                    docs.append(SearchDoc(f"column:{cid}", "column", cid, text))
    if "glossary" in kinds:
        for term in view.catalog.glossary:
            text = " ".join([term.name, term.definition, " ".join(term.synonyms)])
            docs.append(SearchDoc(f"glossary:{term.id}", "glossary", term.name, text))
    if "knowledge_page" in kinds:
        for page in view.pages():
            text = " ".join([page.title, " ".join(page.tags), page.body])
            docs.append(SearchDoc(f"page:{page.id}", "knowledge_page", page.title, text))
    if "curated_query" in kinds:
        for q in view.catalog.curated_queries:
            text = " ".join([q.name, q.description, " ".join(q.datasets)])
            docs.append(SearchDoc(f"query:{q.id}", "curated_query", q.name, text))
    if "memory" in kinds:
        for m in memories:
            text = " ".join([m.type, m.content, " ".join(m.related_ids)])
            docs.append(SearchDoc(f"memory:{m.id}", "memory", m.content[:80], text))
    return docs


def _snippet(text: str, limit: int = 240) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class _Index:
    def __init__(self, docs: list[SearchDoc]) -> None:
        self.docs = docs
        corpus = [tokenize(d.title) * TITLE_WEIGHT + tokenize(d.text) or ["_"] for d in docs]
        self.token_sets = [frozenset(toks) for toks in corpus]
        self.bm25 = BM25Okapi(corpus) if docs else None


class SearchEngine:
    """Caches one BM25 index per (state version, user)."""

    def __init__(self, view: KnowledgeView, kinds: list[str]) -> None:
        self.view = view
        self.kinds = set(kinds)
        self._lock = threading.Lock()
        self._cache: dict[tuple[int, str], _Index] = {}

    def _index(self, user: str, memories: list[Insight]) -> _Index:
        key = (self.view.state.version, user)
        with self._lock:
            idx = self._cache.get(key)
            if idx is None:
                if len(self._cache) > 64:
                    self._cache.clear()
                idx = _Index(build_docs(self.view, memories, self.kinds))
                self._cache[key] = idx
        return idx

    def search(
        self, query: str, kinds: list[str], limit: int, user: str, memories: list[Insight]
    ) -> list[dict[str, Any]]:
        """Ranked results: ``{id, kind, title, score, snippet}``, best first."""
        idx = self._index(user, memories)
        tokens = tokenize(query)
        if idx.bm25 is None or not tokens:
            return []
        scores = idx.bm25.get_scores(tokens)
        wanted = set(kinds)
        query_set = set(tokens)
        ranked = []
        for doc, toks, score in zip(idx.docs, idx.token_sets, scores, strict=True):
            if doc.kind not in wanted:
                continue
            if not query_set & toks:
                continue
            ranked.append((-round(float(score), 6), doc.id, doc))
        ranked.sort(key=lambda t: (t[0], t[1]))
        return [
            {
                "id": doc.id,
                "kind": doc.kind,
                "title": doc.title,
                "score": -neg,
                "snippet": _snippet(doc.text),
            }
            for neg, _, doc in ranked[:limit]
        ]
