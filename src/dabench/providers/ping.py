"""One small model call that shows whether a provider answers: ``dabench providers ping``
and the check every run makes before its first episode."""

from __future__ import annotations

from dabench.providers.base import ChatMessage, ModelResponse, Provider

PING_PROMPT = "Reply with the single word OK."


async def ping(
    provider: Provider, prompt: str = PING_PROMPT, *, max_tokens: int = 32
) -> ModelResponse:
    """Send ``prompt`` alone (no system prompt, no tools) and return the reply; raises
    :class:`~dabench.providers.base.ProviderError` when the provider fails."""
    return await provider.complete(
        [ChatMessage(role="user", content=prompt)],
        system="",
        tools=[],
        max_tokens=max_tokens,
        temperature=0.0,
    )
