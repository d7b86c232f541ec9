"""The provider interface: one model call with tools, in a provider-neutral form.

An agent keeps the conversation as a list of :class:`ChatMessage` and calls
:meth:`Provider.complete`; each adapter translates to and from its API's wire format.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from dabench.journal.records import TokenUsage
from dabench.retry import RetryableError


class ToolSpec(BaseModel):
    """A tool offered to the model (name, description, JSON Schema of its input)."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class ToolCallRequest(BaseModel):
    """A tool call the model asked for."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str = ""
    """The arguments as the model sent them (for malformed-JSON diagnosis)."""
    parse_error: str | None = None
    """Set when the model's arguments were not a valid JSON object."""


class ToolResultContent(BaseModel):
    """The result of one tool call, sent back to the model."""

    tool_call_id: str
    content: str
    is_error: bool = False


class ChatMessage(BaseModel):
    """One message of the conversation in provider-neutral form."""

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    """For assistant messages: the calls it made."""
    tool_results: list[ToolResultContent] = Field(default_factory=list)
    """For ``tool`` messages: the results of the previous assistant message's calls."""


class ModelResponse(BaseModel):
    """What one model call returned."""

    text: str = ""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    stop_reason: str = ""
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_usd: float | None = None
    cost_source: Literal["provider", "price_table", "none"] = "none"
    model: str = ""
    latency_ms: float = 0.0


class ProviderError(RetryableError):
    """A provider call failed. ``retryable`` errors (429, 5xx, timeouts) may be retried;
    when retries are exhausted the episode is a harness error, not a model failure."""


@runtime_checkable
class Provider(Protocol):
    """An LLM API adapter."""

    name: str
    """Provider kind: ``anthropic``, ``openai``, ``claude-cli``, ``fake``..."""
    model: str

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        system: str,
        tools: list[ToolSpec],
        max_tokens: int,
        temperature: float,
    ) -> ModelResponse:
        """Make one model call; raise :class:`ProviderError` on failure."""
        ...
