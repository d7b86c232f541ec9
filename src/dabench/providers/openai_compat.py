"""OpenAI Chat Completions adapter on the official ``openai`` SDK, for every server that
speaks that wire format: OpenAI, OpenRouter, vLLM, Ollama, llama.cpp server, or any
``base_url``.

Tools go out as ``tools: [{"type": "function", ...}]`` and come back as
``message.tool_calls``; results go back as ``role: "tool"`` messages. Arguments that are not
a JSON object are kept verbatim in ``ToolCallRequest.raw_arguments`` with ``parse_error``
set, never raised. ``usage.prompt_tokens_details.cached_tokens`` becomes
``TokenUsage.cache_read`` (and OpenRouter's ``cache_write_tokens`` becomes ``cache_write``);
``TokenUsage.input`` counts the prompt tokens that were neither. OpenRouter's reported
``usage.cost`` (USD) is used as the cost when present.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import openai

from dabench.journal.records import TokenUsage
from dabench.providers.base import (
    ChatMessage,
    ModelResponse,
    ProviderError,
    ToolCallRequest,
    ToolSpec,
)
from dabench.providers.http_errors import SdkErrors, idle_limits, sdk_call
from dabench.providers.pricing import PriceOverrides, PriceTable, price_table, resolve_cost

TOOL_ERROR_PREFIX = "ERROR: "
"""Chat Completions has no error flag on tool messages; failed results get this prefix."""


class OpenAICompatProvider:
    """A :class:`~dabench.providers.base.Provider` for OpenAI-compatible chat completions."""

    def __init__(
        self,
        kind: str,
        model: str,
        *,
        base_url: str | None,
        api_key: str,
        timeout: float = 120.0,
        prices: PriceOverrides | PriceTable = None,
        send_temperature: bool = True,
        max_tokens_field: str = "max_tokens",
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        """``kind`` names the provider (``openai``, ``openrouter``, ``vllm``...) and its price
        section; ``max_tokens_field`` is ``max_completion_tokens`` for OpenAI's newer models;
        ``extra_body`` is merged into every request body."""
        self.name = kind
        self.model = model
        self.send_temperature = send_temperature
        self.max_tokens_field = max_tokens_field
        self.extra_body = dict(extra_body or {})
        self.prices = price_table(prices)
        self.client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(limits=idle_limits()),
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
        """One chat completion; raises :class:`ProviderError` on failure."""
        body = build_request(messages, system=system, tools=tools)
        body[self.max_tokens_field] = max_tokens
        if self.send_temperature:
            body["temperature"] = temperature
        wire_messages = body.pop("messages")
        completion, latency_ms = await sdk_call(
            self.name,
            SDK_ERRORS,
            self.client.chat.completions.create(
                model=self.model,
                messages=wire_messages,
                extra_body={**body, **self.extra_body},
            ),
        )
        return self._to_response(completion.model_dump(warnings=False), latency_ms)

    def _to_response(self, data: dict[str, Any], latency_ms: float) -> ModelResponse:
        choices = data.get("choices") or []
        if not choices:
            error = data.get("error")
            detail = json.dumps(error)[:300] if error else "no choices in the response"
            raise ProviderError(f"{self.name}: empty completion: {detail}", retryable=True)
        choice = choices[0]
        message = choice.get("message") or {}
        calls = [parse_tool_call(c) for c in message.get("tool_calls") or []]
        raw_usage = data.get("usage") or {}
        usage = usage_from(raw_usage)
        model = str(data.get("model") or self.model)
        reported = raw_usage.get("cost")
        cost, source = resolve_cost(
            float(reported) if isinstance(reported, int | float) else None,
            self.name,
            model,
            usage,
            self.prices,
        )
        return ModelResponse(
            text=str(message.get("content") or ""),
            tool_calls=calls,
            stop_reason=str(choice.get("finish_reason") or ""),
            usage=usage,
            cost_usd=cost,
            cost_source=source,
            model=model,
            latency_ms=latency_ms,
        )


def parse_tool_call(call: dict[str, Any]) -> ToolCallRequest:
    """A ``ToolCallRequest`` from a wire ``tool_calls`` item; bad JSON sets ``parse_error``."""
    function = call.get("function") or {}
    raw = function.get("arguments")
    call_id = str(call.get("id") or "")
    name = str(function.get("name") or "")
    if isinstance(raw, dict):
        return ToolCallRequest(id=call_id, name=name, arguments=raw, raw_arguments=json.dumps(raw))
    text = "" if raw is None else str(raw)
    if not text.strip():
        return ToolCallRequest(id=call_id, name=name, raw_arguments=text)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        return ToolCallRequest(
            id=call_id, name=name, raw_arguments=text, parse_error=f"invalid JSON: {exc}"
        )
    if not isinstance(parsed, dict):
        return ToolCallRequest(
            id=call_id,
            name=name,
            raw_arguments=text,
            parse_error=f"arguments are a JSON {type(parsed).__name__}, expected an object",
        )
    return ToolCallRequest(id=call_id, name=name, arguments=parsed, raw_arguments=text)


def usage_from(usage: dict[str, Any]) -> TokenUsage:
    """``TokenUsage`` from a chat completion ``usage`` (prompt tokens include cached ones)."""
    details = usage.get("prompt_tokens_details") or {}
    cache_read = int(details.get("cached_tokens") or 0)
    cache_write = int(details.get("cache_write_tokens") or 0)
    prompt = int(usage.get("prompt_tokens") or 0)
    return TokenUsage(
        input=max(0, prompt - cache_read - cache_write),
        output=int(usage.get("completion_tokens") or 0),
        cache_read=cache_read,
        cache_write=cache_write,
    )


def _status_details(exc: openai.APIStatusError) -> tuple[int, str, Mapping[str, str]]:
    message = str(exc.message)
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and "message" in error:
            message = str(error["message"])
    return exc.status_code, message, exc.response.headers


SDK_ERRORS = SdkErrors(
    status=openai.APIStatusError,
    timeout=openai.APITimeoutError,
    connection=openai.APIConnectionError,
    api=openai.APIError,
    details=_status_details,
)
"""How the ``openai`` SDK's failures map to :class:`ProviderError`."""


def build_request(
    messages: list[ChatMessage], *, system: str, tools: list[ToolSpec]
) -> dict[str, Any]:
    """The ``messages``/``tools`` part of a chat completion request body."""
    wire: list[dict[str, Any]] = []
    if system:
        wire.append({"role": "system", "content": system})
    for message in messages:
        wire.extend(_to_wire(message))
    body: dict[str, Any] = {"messages": wire}
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in tools
        ]
    return body


def _to_wire(message: ChatMessage) -> list[dict[str, Any]]:
    if message.role == "tool":
        out: list[dict[str, Any]] = [
            {
                "role": "tool",
                "tool_call_id": r.tool_call_id,
                "content": (TOOL_ERROR_PREFIX + r.content) if r.is_error else r.content,
            }
            for r in message.tool_results
        ]
        if message.content:
            out.append({"role": "user", "content": message.content})
        return out
    if message.role == "assistant":
        if not message.content and not message.tool_calls:
            return []  # an empty assistant turn is rejected by some servers and says nothing
        item: dict[str, Any] = {"role": "assistant", "content": message.content or None}
        if message.tool_calls:
            item["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": _replay_arguments(c),
                    },
                }
                for c in message.tool_calls
            ]
        return [item]
    return [{"role": "user", "content": message.content}]


def _replay_arguments(call: ToolCallRequest) -> str:
    """Arguments to send back in the history: verbatim when they parsed, ``{}``-style JSON of
    the parsed arguments otherwise (some servers re-parse history and reject bad JSON)."""
    if call.raw_arguments and call.parse_error is None:
        return call.raw_arguments
    return json.dumps(call.arguments)
