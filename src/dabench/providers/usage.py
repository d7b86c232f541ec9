"""Token usage in the Anthropic shape, shared by the Messages API adapter and the claude CLI."""

from __future__ import annotations

from typing import Any

from dabench.journal.records import TokenUsage


def anthropic_usage(usage: dict[str, Any]) -> TokenUsage:
    """``TokenUsage`` from an Anthropic ``usage`` object.

    ``input_tokens`` excludes cached tokens there; ``cache_creation_input_tokens`` becomes
    ``cache_write`` and ``cache_read_input_tokens`` becomes ``cache_read``.
    """
    return TokenUsage(
        input=int(usage.get("input_tokens") or 0),
        output=int(usage.get("output_tokens") or 0),
        cache_read=int(usage.get("cache_read_input_tokens") or 0),
        cache_write=int(usage.get("cache_creation_input_tokens") or 0),
    )
