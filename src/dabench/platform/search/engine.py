"""Search over the effective knowledge: datasets, columns, glossary, knowledge pages,
curated queries and (when memory is on) the memories the caller may see.

The profile's ``search.ranking`` picks the order (see :mod:`dabench.platform.search.ranking`). The
default is BM25 (``rank_bm25.BM25Okapi``, titles weighted x3) over a light tokenisation
(lower-case alphanumeric words, identifiers split on ``.`` and ``_``, a trailing plural ``s``
dropped); ``embedding`` and ``hybrid`` add text embeddings from the profile's
``search.embedding_model`` (optional extras, :mod:`dabench.platform.search.embedding`).
Ties break on the result id, so equal inputs give equal rankings. The index is rebuilt when
the state version changes (a promotion or a memory) and is per user (memories differ);
document embeddings are cached by text, so a rebuild embeds only new documents.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

from rank_bm25 import BM25Okapi

from dabench.platform.knowledge.view import KnowledgeView
from dabench.platform.profile import DEFAULT_EMBEDDING_MODEL, EmbeddingModelName, SearchRanking
from dabench.platform.search.embedding import load_embedder
from dabench.platform.search.kinds import KIND_PREFIX as KIND_PREFIX
from dabench.platform.search.kinds import PREFIX_KIND as PREFIX_KIND
from dabench.platform.search.ranking import DocVectors, fuse, order
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


_WORD = re.compile(r"[A-Za-z0-9]+")


def embedding_text(doc: SearchDoc) -> str:
    """What the embedding ranking embeds for ``doc``: the words of its title and text minus
    :data:`STOP_WORDS` (function words would dominate the average of a long document; MiniLM
    ranks the world's documents slightly better on this form too, and it is shorter)."""
    words = _WORD.findall(f"{doc.title} {doc.text}")
    return " ".join(w for w in words if w.lower() not in STOP_WORDS)


class _Index:
    def __init__(self, docs: list[SearchDoc], vectors: DocVectors | None) -> None:
        self.docs = docs
        corpus = [tokenize(d.title) * TITLE_WEIGHT + tokenize(d.text) or ["_"] for d in docs]
        self.token_sets = [frozenset(toks) for toks in corpus]
        self.bm25 = BM25Okapi(corpus) if docs else None
        self.matrix = None if vectors is None else vectors.matrix([embedding_text(d) for d in docs])


Ranked = list[tuple[float, SearchDoc]]


class SearchEngine:
    """Caches one index per (state version, user); ranks with the profile's ranking mode.

    A mode other than ``bm25`` loads ``embedding_model`` here, so a missing extra fails at
    platform start with a :class:`~dabench.errors.UserInputError`.
    """

    def __init__(
        self,
        view: KnowledgeView,
        kinds: list[str],
        ranking: SearchRanking = "bm25",
        embedding_model: EmbeddingModelName = DEFAULT_EMBEDDING_MODEL,
    ) -> None:
        self.view = view
        self.kinds = set(kinds)
        self.ranking: SearchRanking = ranking
        self.vectors = (
            None if ranking == "bm25" else DocVectors(load_embedder(ranking, embedding_model))
        )
        self._lock = threading.Lock()
        self._cache: dict[tuple[int, str], _Index] = {}

    @property
    def embedding_model(self) -> str | None:
        """The embedding model's identifier (with the weights' sha256), or ``None`` for bm25."""
        return None if self.vectors is None else self.vectors.embedder.model_id

    def _index(self, user: str, memories: list[Insight]) -> _Index:
        key = (self.view.state.version, user)
        with self._lock:
            idx = self._cache.get(key)
            if idx is None:
                if len(self._cache) > 64:
                    self._cache.clear()
                idx = _Index(build_docs(self.view, memories, self.kinds), self.vectors)
                self._cache[key] = idx
        return idx

    def warm(self, user: str, memories: list[Insight]) -> int:
        """Build (or reuse) ``user``'s index now; returns its number of documents."""
        return len(self._index(user, memories).docs)

    def _bm25(self, idx: _Index, query: str, wanted: set[str]) -> Ranked:
        tokens = tokenize(query)
        if idx.bm25 is None or not tokens:
            return []
        scores = idx.bm25.get_scores(tokens)
        query_set = set(tokens)
        return order(
            [
                (float(score), doc.id, doc)
                for doc, toks, score in zip(idx.docs, idx.token_sets, scores, strict=True)
                if doc.kind in wanted and query_set & toks
            ]
        )

    def _embedding(self, idx: _Index, query: str, wanted: set[str]) -> Ranked:
        if self.vectors is None or idx.matrix is None or not idx.docs or not query.strip():
            return []
        sims = self.vectors.cosine(idx.matrix, query)
        floor = self.vectors.embedder.min_similarity
        return order(
            [
                (float(sim), doc.id, doc)
                for doc, sim in zip(idx.docs, sims, strict=True)
                if doc.kind in wanted and round(float(sim), 6) >= floor
            ]
        )

    def rank(self, query: str, kinds: list[str], user: str, memories: list[Insight]) -> Ranked:
        """Every matching document as ``(score, doc)``, best first (see module docs)."""
        idx = self._index(user, memories)
        wanted = set(kinds)
        if self.ranking == "bm25":
            return self._bm25(idx, query, wanted)
        if self.ranking == "embedding":
            return self._embedding(idx, query, wanted)
        lexical = self._bm25(idx, query, wanted)
        semantic = self._embedding(idx, query, wanted)
        return fuse([[(d.id, d) for _, d in lexical], [(d.id, d) for _, d in semantic]])

    def search(
        self, query: str, kinds: list[str], limit: int, user: str, memories: list[Insight]
    ) -> list[dict[str, Any]]:
        """Ranked results: ``{id, kind, title, score, snippet}``, best first."""
        return [
            {
                "id": doc.id,
                "kind": doc.kind,
                "title": doc.title,
                "score": score,
                "snippet": _snippet(doc.text),
            }
            for score, doc in self.rank(query, kinds, user, memories)[:limit]
        ]
