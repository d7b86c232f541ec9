"""The platform's knowledge: the effective catalog, the memory lifecycle and enrichment.

- :mod:`.view`: :class:`KnowledgeView`, the world's catalog with promoted knowledge overlaid.
- :mod:`.memory`: :class:`MemoryService`, memory -> insight -> knowledge (capture, manage,
  apply, reject, roll back).
- :mod:`.enrichment`: the semantic context blocks attached to tool results.
- :mod:`.tokens`: the approximate token count that enrichment volume is measured in.
"""

from dabench.platform.knowledge.enrichment import (
    NO_ENRICHMENT,
    Enrichment,
    dataset_block,
    enrich_datasets,
    summarize_datasets,
)
from dabench.platform.knowledge.memory import MemoryService
from dabench.platform.knowledge.tokens import approx_tokens
from dabench.platform.knowledge.view import KnowledgeView

__all__ = [
    "NO_ENRICHMENT",
    "Enrichment",
    "KnowledgeView",
    "MemoryService",
    "approx_tokens",
    "dataset_block",
    "enrich_datasets",
    "summarize_datasets",
]
