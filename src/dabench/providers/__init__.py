"""LLM provider adapters behind one interface (:class:`Provider`), built from ``KIND:MODEL``
specs by :func:`make_provider`.

Kinds: ``anthropic``; the OpenAI-compatible ``openai``, ``openrouter``, ``vllm``, ``ollama``,
``llamacpp``, ``openai-compat``; ``fake`` (scripted, no network). The ``claude`` CLI runs its
own tool loop and is exposed as :func:`run_claude_cli` for the harness to wrap as an agent.
"""

from __future__ import annotations

from dabench.providers.base import (
    ChatMessage,
    ModelResponse,
    Provider,
    ProviderError,
    ToolCallRequest,
    ToolResultContent,
    ToolSpec,
)
from dabench.providers.builtin import OPENAI_COMPAT_KINDS, register_builtin_kinds
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

register_builtin_kinds()

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
