"""LLM provider adapters behind one interface (:class:`Provider`), built from ``KIND:MODEL``
specs by :func:`make_provider`.

Kinds: ``anthropic``; the OpenAI-compatible ``openai``, ``openrouter``, ``vllm``, ``ollama``,
``llamacpp``, ``openai-compat``; ``fake`` (scripted, no network). The ``claude`` CLI runs its
own tool loop and is exposed as :func:`run_claude_cli` for the harness to wrap as an agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dabench.lazy import lazy_exports

if TYPE_CHECKING:
    from dabench.providers.base import (
        ChatMessage,
        ModelResponse,
        Provider,
        ProviderError,
        ToolCallRequest,
        ToolResultContent,
        ToolSpec,
    )
    from dabench.providers.builtin import OPENAI_COMPAT_KINDS
    from dabench.providers.claude_cli import ClaudeCliResult, ClaudeCliToolCall, run_claude_cli
    from dabench.providers.fake import FakeProvider, FakeSettings
    from dabench.providers.pricing import cost_for, price_table, resolve_cost
    from dabench.providers.registry import (
        ProviderSettings,
        make_provider,
        provider_kinds,
        register_provider,
        split_spec,
    )
    from dabench.providers.retry import RetryPolicy, with_retries

__getattr__ = lazy_exports(
    __name__,
    {
        "dabench.providers.base": [
            "ChatMessage",
            "ModelResponse",
            "Provider",
            "ProviderError",
            "ToolCallRequest",
            "ToolResultContent",
            "ToolSpec",
        ],
        "dabench.providers.builtin": [
            "OPENAI_COMPAT_KINDS",
        ],
        "dabench.providers.claude_cli": [
            "ClaudeCliResult",
            "ClaudeCliToolCall",
            "run_claude_cli",
        ],
        "dabench.providers.fake": [
            "FakeProvider",
            "FakeSettings",
        ],
        "dabench.providers.pricing": [
            "cost_for",
            "price_table",
            "resolve_cost",
        ],
        "dabench.providers.registry": [
            "ProviderSettings",
            "make_provider",
            "provider_kinds",
            "register_provider",
            "split_spec",
        ],
        "dabench.providers.retry": [
            "RetryPolicy",
            "with_retries",
        ],
    },
)

__all__ = [
    "OPENAI_COMPAT_KINDS",
    "ChatMessage",
    "ClaudeCliResult",
    "ClaudeCliToolCall",
    "FakeProvider",
    "FakeSettings",
    "ModelResponse",
    "Provider",
    "ProviderError",
    "ProviderSettings",
    "RetryPolicy",
    "ToolCallRequest",
    "ToolResultContent",
    "ToolSpec",
    "cost_for",
    "make_provider",
    "price_table",
    "provider_kinds",
    "register_provider",
    "resolve_cost",
    "run_claude_cli",
    "split_spec",
    "with_retries",
]
