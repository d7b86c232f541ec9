"""Anthropic Messages API adapter on the official ``anthropic`` SDK.

Tools are sent as ``tools`` and come back as ``tool_use`` blocks; results go back as
``tool_result`` blocks in a user turn. Prompt caching marks the system prompt, the tool list
and (optionally) the newest message with ``cache_control: {"type": "ephemeral"}``, and
the usage's ``cache_creation_input_tokens`` / ``cache_read_input_tokens`` become
``TokenUsage.cache_write`` / ``cache_read``. The SDK's own retries are off (``max_retries=0``):
retries belong to :func:`dabench.providers.retry.with_retries`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anthropic

from dabench.providers.base import (
    ChatMessage,
    ModelResponse,
    ToolCallRequest,
    ToolSpec,
)
from dabench.providers.http_errors import SdkErrors, idle_limits, malformed_response, sdk_call
from dabench.providers.pricing import PriceOverrides, PriceTable, price_table, resolve_cost
from dabench.providers.usage import anthropic_usage

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}


class AnthropicProvider:
    """A :class:`~dabench.providers.base.Provider` for the Anthropic Messages API."""

    name = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 120.0,
        prices: PriceOverrides | PriceTable = None,
        cache: bool = True,
        cache_conversation: bool = True,
        send_temperature: bool = False,
    ) -> None:
        """``cache`` marks system prompt and tools as cacheable; ``cache_conversation`` also
        marks the newest message so a tool loop re-reads its prefix from the cache.
        ``send_temperature`` adds ``temperature`` to the request body (newer SDKs no longer
        expose the parameter and newer models may reject it)."""
        self.model = model
        self.cache = cache
        self.cache_conversation = cache_conversation
        self.send_temperature = send_temperature
        self.prices = price_table(prices)
        self.client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=anthropic.DefaultAsyncHttpxClient(limits=idle_limits()),
        )

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        system: str,
        tools: list[ToolSpec],
        max_tokens: int,
        temperature: float,
    ) -> ModelResponse:
        """One Messages API call; raises :class:`ProviderError` on failure."""
        body = build_request(
            messages,
            system=system,
            tools=tools,
            cache=self.cache,
            cache_conversation=self.cache_conversation,
        )
        extra_body: dict[str, Any] = {"temperature": temperature} if self.send_temperature else {}
        message, latency_ms = await sdk_call(
            self.name,
            SDK_ERRORS,
            self.client.messages.create(
                model=self.model, max_tokens=max_tokens, extra_body=extra_body or None, **body
            ),
        )
        return self._to_response(message.model_dump(warnings=False), latency_ms)

    def _to_response(self, data: dict[str, Any], latency_ms: float) -> ModelResponse:
        if data.get("type") != "message":
            raise malformed_response(self.name, f"type is {data.get('type')!r}, not 'message'")
        texts: list[str] = []
        calls: list[ToolCallRequest] = []
        for block in data.get("content") or []:
            if block.get("type") == "text":
                texts.append(block.get("text", ""))
            elif block.get("type") == "tool_use":
                calls.append(_tool_call(block))
        usage = anthropic_usage(data.get("usage") or {})
        model = str(data.get("model") or self.model)
        cost, source = resolve_cost(None, self.name, model, usage, self.prices)
        return ModelResponse(
            text="".join(texts),
            tool_calls=calls,
            stop_reason=str(data.get("stop_reason") or ""),
            usage=usage,
            cost_usd=cost,
            cost_source=source,
            model=model,
            latency_ms=latency_ms,
        )


def _tool_call(block: dict[str, Any]) -> ToolCallRequest:
    raw_input = block.get("input")
    raw = json.dumps(raw_input, sort_keys=True)
    if isinstance(raw_input, dict):
        return ToolCallRequest(
            id=str(block.get("id", "")),
            name=str(block.get("name", "")),
            arguments=raw_input,
            raw_arguments=raw,
        )
    return ToolCallRequest(
        id=str(block.get("id", "")),
        name=str(block.get("name", "")),
        raw_arguments=raw,
        parse_error=f"tool input is {type(raw_input).__name__}, expected a JSON object",
    )


def _status_details(exc: anthropic.APIStatusError) -> tuple[int, str, Mapping[str, str]]:
    message = str(exc.message)
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            message = f"{error.get('type', 'error')}: {error.get('message', '')}"
    return exc.status_code, message, exc.response.headers


SDK_ERRORS = SdkErrors(
    status=anthropic.APIStatusError,
    timeout=anthropic.APITimeoutError,
    connection=anthropic.APIConnectionError,
    api=anthropic.APIError,
    details=_status_details,
)
"""How the ``anthropic`` SDK's failures map to :class:`ProviderError`."""


def build_request(
    messages: list[ChatMessage],
    *,
    system: str,
    tools: list[ToolSpec],
    cache: bool = True,
    cache_conversation: bool = True,
) -> dict[str, Any]:
    """The ``system``/``tools``/``messages`` part of a Messages API request body."""
    wire = [_to_wire(m) for m in messages]
    # The API rejects empty content; an assistant turn that said nothing carries no information.
    body: dict[str, Any] = {"messages": [w for w in wire if w["content"]]}
    if system:
        block: dict[str, Any] = {"type": "text", "text": system}
        if cache:
            block["cache_control"] = EPHEMERAL
        body["system"] = [block]
    if tools:
        wire_tools: list[dict[str, Any]] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in tools
        ]
        if cache:
            wire_tools[-1]["cache_control"] = EPHEMERAL
        body["tools"] = wire_tools
    if cache and cache_conversation and body["messages"]:
        last_content = body["messages"][-1]["content"]
        if last_content:
            last_content[-1]["cache_control"] = EPHEMERAL
    return body


def _to_wire(message: ChatMessage) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if message.role == "tool":
        content.extend(
            {
                "type": "tool_result",
                "tool_use_id": r.tool_call_id,
                "content": r.content,
                "is_error": r.is_error,
            }
            for r in message.tool_results
        )
        if message.content:
            content.append({"type": "text", "text": message.content})
        return {"role": "user", "content": content}
    if message.content:
        content.append({"type": "text", "text": message.content})
    if message.role == "assistant":
        content.extend(
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
            for c in message.tool_calls
        )
    return {"role": message.role, "content": content}


__all__ = ["AnthropicProvider", "build_request"]
