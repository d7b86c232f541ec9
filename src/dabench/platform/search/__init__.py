"""Search over the effective knowledge, and its rankings.

- :mod:`.engine`: the documents and the :class:`SearchEngine` (BM25, embedding or hybrid).
- :mod:`.ranking`: deterministic ordering, cosine scores, reciprocal rank fusion.
- :mod:`.embedding`: the text embedding models (optional extras), with one backend module
  per model (:mod:`.embedding_wordllama`, :mod:`.embedding_minilm`).
"""

from dabench.platform.search.embedding import MODEL_NAME, MODELS, Embedder, load_embedder
from dabench.platform.search.engine import (
    KIND_PREFIX,
    PREFIX_KIND,
    SearchDoc,
    SearchEngine,
    build_docs,
    embedding_text,
    tokenize,
)
from dabench.platform.search.ranking import MIN_SIMILARITY, RRF_K

__all__ = [
    "KIND_PREFIX",
    "MIN_SIMILARITY",
    "MODELS",
    "MODEL_NAME",
    "PREFIX_KIND",
    "RRF_K",
    "Embedder",
    "SearchDoc",
    "SearchEngine",
    "build_docs",
    "embedding_text",
    "load_embedder",
    "tokenize",
]
