"""A deterministic token-count approximation used for enrichment volume.

No tokenizer ships with dabench; ``ceil(chars / 4)`` is the documented stand-in. It is
only ever compared with itself (full vs delivered enrichment, arm vs arm).
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4


def approx_tokens(text: str) -> int:
    """Approximate token count of ``text``: ``ceil(len(text) / 4)``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)
