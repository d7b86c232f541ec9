"""Search over the effective knowledge, and its rankings.

- :mod:`.engine`: the documents and the :class:`SearchEngine` (BM25, embedding or hybrid).
- :mod:`.ranking`: deterministic ordering, cosine scores, reciprocal rank fusion.
- :mod:`.embedding`: the text embedding models (optional extras), with one backend module
  per model (:mod:`.embedding_wordllama`, :mod:`.embedding_minilm`).

The package imports its modules on first use: a platform without the search tool never loads
the rankers (numpy).
"""

from typing import TYPE_CHECKING

from dabench.lazy import lazy_exports
from dabench.platform.search.kinds import KIND_PREFIX, PREFIX_KIND

if TYPE_CHECKING:
    from dabench.platform.search.embedding import MODEL_NAME, MODELS, Embedder, load_embedder
    from dabench.platform.search.engine import (
        SearchDoc,
        SearchEngine,
        build_docs,
        embedding_text,
        tokenize,
    )
    from dabench.platform.search.ranking import MIN_SIMILARITY, RRF_K

__getattr__ = lazy_exports(
    __name__,
    {
        "dabench.platform.search.embedding": ["MODEL_NAME", "MODELS", "Embedder", "load_embedder"],
        "dabench.platform.search.engine": [
            "SearchDoc",
            "SearchEngine",
            "build_docs",
            "embedding_text",
            "tokenize",
        ],
        "dabench.platform.search.ranking": ["MIN_SIMILARITY", "RRF_K"],
    },
)

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
