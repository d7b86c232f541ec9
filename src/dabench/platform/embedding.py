"""Static text embeddings for the ``embedding`` and ``hybrid`` search rankings (optional extra).

The model is WordLlama's default ``l2_supercat_256`` (token embeddings averaged over the
text), loaded from the files packaged inside the ``wordllama`` wheel, so nothing is fetched
from the network. ``wordllama`` is an optional dependency: ``pip install 'dabench[embeddings]'``.
One :class:`Embedder` is loaded per process, on first use, under a lock.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dabench.errors import UserInputError

MODEL_NAME = "wordllama/l2_supercat_256"
"""The packaged model: WordLlama's ``l2_supercat`` token embeddings truncated to 256 dims."""

_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")


class Embedder:
    """Embeds texts into L2-normalised float32 rows; counts the texts it embedded."""

    def __init__(self, inference: Any, model_id: str) -> None:
        self._inference = inference
        self._lock = threading.Lock()
        self.model_id = model_id
        """``wordllama/l2_supercat_256@sha256:<hex of the weights file>``."""
        self.texts_embedded = 0
        """How many texts :meth:`embed` has embedded in this process (a cost counter)."""

    @property
    def dim(self) -> int:
        """Width of an embedding row."""
        return int(self._inference.embedding.shape[1])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32, each row of unit length (all-zero for an empty text).

        Texts are embedded one at a time, so a text's vector never depends on its batch.
        """
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            for i, text in enumerate(texts):
                if text.strip():
                    out[i] = self._inference.embed([text], norm=False)[0]
            self.texts_embedded += len(texts)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


_loaded: Embedder | None = None
_load_lock = threading.Lock()


def _import_wordllama(mode: str) -> tuple[Any, Any, Any, Path]:
    """Import wordllama without letting it reconfigure the root logger (it calls basicConfig)."""
    root_logger = logging.getLogger()
    handlers, level = list(root_logger.handlers), root_logger.level
    try:
        import wordllama
        from safetensors import safe_open
        from wordllama import WordLlama
        from wordllama.inference import WordLlamaInference
    except ImportError as exc:
        raise UserInputError(
            f"search.ranking '{mode}' needs the embeddings extra: pip install 'dabench[embeddings]'"
        ) from exc
    finally:
        root_logger.handlers[:] = handlers
        root_logger.setLevel(level)
    return WordLlama, WordLlamaInference, safe_open, Path(wordllama.__file__).parent


def load_embedder(mode: str) -> Embedder:
    """The process's embedder, loaded once; ``mode`` is named in the missing-extra error."""
    global _loaded
    with _load_lock:
        if _loaded is None:
            word_llama, inference_cls, safe_open, root = _import_wordllama(mode)
            weights = root.joinpath(*_WEIGHTS)
            tokenizer_file = root.joinpath(*_TOKENIZER)
            for path in (weights, tokenizer_file):
                if not path.is_file():
                    raise UserInputError(
                        f"search.ranking '{mode}': the wordllama install lacks {path}; "
                        "reinstall it: pip install --force-reinstall 'dabench[embeddings]'"
                    )
            digest = hashlib.sha256(weights.read_bytes()).hexdigest()
            tokenizer = word_llama.load_tokenizer(tokenizer_file)
            with safe_open(str(weights), framework="np") as fh:
                matrix = fh.get_tensor("embedding.weight")
            _loaded = Embedder(inference_cls(matrix, tokenizer), f"{MODEL_NAME}@sha256:{digest}")
        return _loaded
