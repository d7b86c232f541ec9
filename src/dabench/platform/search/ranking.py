"""Ranking primitives of ``search``: deterministic ordering, cosine scores, reciprocal rank fusion.

Modes (``search.ranking`` of a profile) and the meaning of a result's ``score``:

- ``bm25`` (default): the BM25 score of the query's tokens; only documents sharing a token.
- ``embedding``: cosine similarity in [-1, 1] of the query's and the document's embeddings
  (:mod:`dabench.platform.search.embedding`); only documents at or above the model's
  ``min_similarity`` (:data:`MIN_SIMILARITY` for the default model).
- ``hybrid``: reciprocal rank fusion of the two rankings above,
  ``sum(1 / (RRF_K + rank))`` over the rankings that contain the document (rank from 1).

Scores are rounded to 6 decimals and ties break on the result id, so equal inputs give
byte-identical results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from dabench.platform.profile import DEFAULT_EMBEDDING_MODEL
from dabench.platform.search.embedding import MODELS, Embedder

MIN_SIMILARITY = MODELS[DEFAULT_EMBEDDING_MODEL].min_similarity
"""Cosine similarity below which ``embedding`` (and the embedding half of ``hybrid``) drops a
document with the default model. With it a query's median similarity over the world's
documents is about 0.1 and its relevant documents mostly score 0.2..0.65."""

RRF_K = 60
"""The reciprocal-rank-fusion constant (the value of Cormack et al., 2009)."""

T = TypeVar("T")


def order(candidates: Sequence[tuple[float, str, T]]) -> list[tuple[float, T]]:
    """``(score, id, item)`` -> ``(rounded score, item)``, best first, ties on id."""
    keyed = [(-round(float(score), 6), ident, item) for score, ident, item in candidates]
    keyed.sort(key=lambda t: (t[0], t[1]))
    return [(-neg, item) for neg, _, item in keyed]


def fuse(rankings: Sequence[Sequence[tuple[str, T]]], k: int = RRF_K) -> list[tuple[float, T]]:
    """Reciprocal rank fusion of ``(id, item)`` rankings (best first) -> ``(score, item)``."""
    scores: dict[str, float] = {}
    items: dict[str, T] = {}
    for ranking in rankings:
        for rank, (ident, item) in enumerate(ranking, start=1):
            scores[ident] = scores.get(ident, 0.0) + 1.0 / (k + rank)
            items[ident] = item
    return order([(score, ident, items[ident]) for ident, score in scores.items()])


class DocVectors:
    """Document embeddings cached by text: an index rebuild embeds only texts it has not seen."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._cache: dict[str, np.ndarray] = {}

    def matrix(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float64 unit rows (float64 so dot products are stable to 6 dp)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            for text, row in zip(missing, self.embedder.embed(missing), strict=True):
                self._cache[text] = row
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float64)
        return np.vstack([self._cache[t] for t in texts]).astype(np.float64)

    def cosine(self, matrix: np.ndarray, query: str) -> np.ndarray:
        """Cosine similarity of each row of ``matrix`` with ``query`` (zeros for a blank query)."""
        q = self.embedder.embed([query])[0].astype(np.float64)
        return np.asarray(matrix @ q, dtype=np.float64)
