"""Text embeddings for the ``embedding`` and ``hybrid`` search rankings (optional extras).

A profile's ``search.embedding_model`` picks one model from :data:`MODELS`:

- ``wordllama-l2-supercat-256`` (default): WordLlama's static token embeddings, averaged over
  the text (:mod:`dabench.platform.search.embedding_wordllama`, extra ``embeddings``).
- ``all-minilm-l6-v2``: the sentence-transformers MiniLM encoder, run on CPU with torch
  (:mod:`dabench.platform.search.embedding_minilm`, extra ``embeddings-minilm``).

Both load their files from an installed package, never from the network. One
:class:`Embedder` per (process, model) is loaded on first use, under a lock.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dabench.lazy import load_ref
from dabench.platform.profile import DEFAULT_EMBEDDING_MODEL, EmbeddingModelName

EncodeOne = Callable[[str], np.ndarray]
"""Embeds one non-blank text into a 1-D float vector (any length scale)."""


@dataclass(frozen=True)
class Backend:
    """What a backend's loader returns: the encoder, the row width and the weights file."""

    encode_one: EncodeOne
    dim: int
    weights: Path


class Embedder:
    """Embeds texts into L2-normalised float32 rows; counts the texts it embedded.

    Texts are embedded one at a time, so a text's vector never depends on the batch it
    came in (batched inference pads to the longest text, which moves the last bits).
    """

    def __init__(self, backend: Backend, model_id: str, min_similarity: float) -> None:
        self._encode_one = backend.encode_one
        self._lock = threading.Lock()
        self.dim = backend.dim
        """Width of an embedding row."""
        self.model_id = model_id
        """``<model name>@sha256:<hex of the weights file>``."""
        self.min_similarity = min_similarity
        """Cosine similarity below which the embedding ranking drops a document."""
        self.texts_embedded = 0
        """How many texts :meth:`embed` has embedded in this process (a cost counter)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, each row of unit length (all-zero for a blank text)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            for i, text in enumerate(texts):
                if text.strip():
                    out[i] = self._encode_one(text)
            self.texts_embedded += len(texts)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


@dataclass(frozen=True)
class ModelSpec:
    """A registered embedding model."""

    name: str
    """The model's public name; the start of :attr:`Embedder.model_id`."""
    loader: str
    """``"module:attr"`` of the backend's loader, ``mode`` (named in a missing-extra error)
    -> the loaded :class:`Backend`; imported only when the model is first used."""
    min_similarity: float
    """Cosine similarity below which ``embedding`` (and hybrid's embedding half) drops a
    document; set from the model's similarity spread over the world's documents."""


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


MODELS: dict[EmbeddingModelName, ModelSpec] = {
    "wordllama-l2-supercat-256": ModelSpec(
        "wordllama/l2_supercat_256",
        "dabench.platform.search.embedding_wordllama:load",
        min_similarity=0.2,
    ),
    "all-minilm-l6-v2": ModelSpec(
        "sentence-transformers/all-MiniLM-L6-v2",
        "dabench.platform.search.embedding_minilm:load",
        min_similarity=0.2,
    ),
}
"""Every model ``search.embedding_model`` can name."""

MODEL_NAME = MODELS[DEFAULT_EMBEDDING_MODEL].name
"""The default model's name: WordLlama's ``l2_supercat`` token embeddings at 256 dims."""

_loaded: dict[str, Embedder] = {}
_load_lock = threading.Lock()


def load_embedder(mode: str, model: EmbeddingModelName = DEFAULT_EMBEDDING_MODEL) -> Embedder:
    """The process's embedder for ``model``, loaded once; ``mode`` is named in errors."""
    with _load_lock:
        embedder = _loaded.get(model)
        if embedder is None:
            spec = MODELS[model]
            backend: Backend = load_ref(spec.loader)(mode)
            model_id = f"{spec.name}@sha256:{sha256_of(backend.weights)}"
            embedder = _loaded[model] = Embedder(backend, model_id, spec.min_similarity)
        return embedder
