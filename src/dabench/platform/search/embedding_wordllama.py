"""WordLlama backend: ``l2_supercat_256`` static token embeddings, averaged over the text.

The weights and tokenizer are the files packaged inside the ``wordllama`` wheel (extra
``embeddings``), so nothing is fetched from the network.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np

from dabench.errors import UserInputError
from dabench.platform.search.embedding import Backend

_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")


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


def load(mode: str) -> Backend:
    """Load the packaged model; ``mode`` is named in the missing-extra error."""
    word_llama, inference_cls, safe_open, root = _import_wordllama(mode)
    weights = root.joinpath(*_WEIGHTS)
    tokenizer_file = root.joinpath(*_TOKENIZER)
    for path in (weights, tokenizer_file):
        if not path.is_file():
            raise UserInputError(
                f"search.ranking '{mode}': the wordllama install lacks {path}; "
                "reinstall it: pip install --force-reinstall 'dabench[embeddings]'"
            )
    tokenizer = word_llama.load_tokenizer(tokenizer_file)
    with safe_open(str(weights), framework="np") as fh:
        matrix = fh.get_tensor("embedding.weight")
    inference = inference_cls(matrix, tokenizer)

    def encode_one(text: str) -> np.ndarray:
        return np.asarray(inference.embed([text], norm=False)[0], dtype=np.float32)

    return Backend(encode_one, int(inference.embedding.shape[1]), weights)
