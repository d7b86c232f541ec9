"""AnthropicProvider against a local server speaking the Messages API wire format."""

from __future__ import annotations

import random

import pytest

from dabench.providers import (
    ChatMessage,
    ProviderError,
    RetryPolicy,
    ToolCallRequest,
    ToolResultContent,
    ToolSpec,
    make_provider,
    with_retries,
)
from dabench.providers.anthropic import AnthropicProvider

from .servers import (
    SQL_TOOL,
    Reply,
    WireServer,
    anthropic_error,
    anthropic_message,
    closed_port_url,
)

SEARCH_TOOL = ToolSpec(name="search", description="Search the catalog")


def provider(url: str, **settings: object) -> AnthropicProvider:
    made = make_provider(
        "anthropic:claude-sonnet-4-6", base_url=url, api_key="test-key", **settings
    )
    assert isinstance(made, AnthropicProvider)
    return made


async def ask(p: AnthropicProvider, messages: list[ChatMessage], tools: list[ToolSpec] = []):  # noqa: B006
    return await p.complete(
        messages, system="You are a data agent.", tools=tools, max_tokens=256, temperature=0.0
    )


async def test_plain_text_and_request_shape(wire: WireServer) -> None:
    wire.enqueue(Reply(body=anthropic_message("The answer is 42.")))
    response = await ask(provider(wire.url), [ChatMessage(role="user", content="What?")])
    assert response.text == "The answer is 42."
    assert response.tool_calls == []
    assert response.stop_reason == "end_turn"
    assert response.model == "claude-sonnet-4-6"
    request = wire.requests[0]
    assert request.path == "/v1/messages"
    # Older SDKs send x-api-key, newer ones Authorization: Bearer; either carries the key.
    assert "test-key" in (
        request.headers.get("x-api-key", "") + request.headers.get("authorization", "")
    )
    assert "anthropic-version" in request.headers
    assert request.body["model"] == "claude-sonnet-4-6"
    assert request.body["max_tokens"] == 256
    assert request.body["system"] == [
        {"type": "text", "text": "You are a data agent.", "cache_control": {"type": "ephemeral"}}
    ]
    assert "tools" not in request.body
    assert "temperature" not in request.body


async def test_tool_use_response(wire: WireServer) -> None:
    wire.enqueue(
        Reply(
            body=anthropic_message(
                "Let me look.",
                tool_uses=[
                    ("toolu_1", "sql_query", {"sql": "SELECT 1"}),
                    ("toolu_2", "search", {}),
                ],
            )
        )
    )
    response = await ask(
        provider(wire.url), [ChatMessage(role="user", content="q")], [SQL_TOOL, SEARCH_TOOL]
    )
    assert response.text == "Let me look."
    assert response.stop_reason == "tool_use"
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("toolu_1", "sql_query", {"sql": "SELECT 1"}),
        ("toolu_2", "search", {}),
    ]
    assert all(c.parse_error is None for c in response.tool_calls)
    tools = wire.requests[0].body["tools"]
    assert [t["name"] for t in tools] == ["sql_query", "search"]
    assert tools[0]["input_schema"] == SQL_TOOL.input_schema
    assert "cache_control" not in tools[0]
    assert tools[-1]["cache_control"] == {"type": "ephemeral"}


async def test_tool_result_round_trip_shape(wire: WireServer) -> None:
    wire.enqueue(Reply(body=anthropic_message("Done: 3 rows.")))
    messages = [
        ChatMessage(role="user", content="How many?"),
        ChatMessage(
            role="assistant",
            content="Checking.",
            tool_calls=[ToolCallRequest(id="toolu_1", name="sql_query", arguments={"sql": "S"})],
        ),
        ChatMessage(
            role="tool",
            tool_results=[
                ToolResultContent(tool_call_id="toolu_1", content="3", is_error=False),
            ],
        ),
    ]
    response = await ask(provider(wire.url), messages, [SQL_TOOL])
    assert response.text == "Done: 3 rows."
    sent = wire.requests[0].body["messages"]
    assert sent[0] == {"role": "user", "content": [{"type": "text", "text": "How many?"}]}
    assert sent[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "sql_query", "input": {"sql": "S"}},
        ],
    }
    assert sent[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "3",
                "is_error": False,
                "cache_control": {"type": "ephemeral"},
            }
        ],
    }


async def test_caching_can_be_turned_off(wire: WireServer) -> None:
    wire.enqueue(Reply(body=anthropic_message("ok")))
    p = provider(wire.url, cache=False)
    await ask(p, [ChatMessage(role="user", content="q")], [SQL_TOOL])
    body = wire.requests[0].body
    assert "cache_control" not in str(body)


async def test_usage_with_cache_tokens_and_price_table_cost(wire: WireServer) -> None:
    wire.enqueue(
        Reply(
            body=anthropic_message(
                "ok", input_tokens=1000, output_tokens=100, cache_read=2000, cache_write=500
            )
        )
    )
    response = await ask(provider(wire.url), [ChatMessage(role="user", content="q")])
    assert response.usage.input == 1000
    assert response.usage.output == 100
    assert response.usage.cache_read == 2000
    assert response.usage.cache_write == 500
    # claude-sonnet-4-6: $3 in, $15 out, $0.30 cache read, $3.75 cache write per MTok.
    assert response.cost_source == "price_table"
    assert response.cost_usd == pytest.approx((3000 + 1500 + 600 + 1875) / 1e6)


async def test_price_override(wire: WireServer) -> None:
    wire.enqueue(Reply(body=anthropic_message("ok", input_tokens=1_000_000, output_tokens=0)))
    overrides = {"anthropic": {"claude-sonnet-4-6": {"input": 1.0, "output": 2.0}}}
    response = await ask(
        provider(wire.url, prices=overrides), [ChatMessage(role="user", content="q")]
    )
    assert response.cost_usd == pytest.approx(1.0)


async def test_temperature_sent_only_when_asked(wire: WireServer) -> None:
    wire.enqueue(Reply(body=anthropic_message("ok")))
    await ask(provider(wire.url, send_temperature=True), [ChatMessage(role="user", content="q")])
    assert wire.requests[0].body["temperature"] == 0.0


async def test_429_with_retry_after_then_success(wire: WireServer) -> None:
    wire.enqueue(
        anthropic_error(429, "rate_limit_error", "slow down", {"retry-after": "7"}),
        Reply(body=anthropic_message("after the wait")),
    )
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    p = provider(wire.url)
    response = await with_retries(
        lambda: ask(p, [ChatMessage(role="user", content="q")]),
        RetryPolicy(max_attempts=3, base_delay=0.5, max_delay=2.0),
        sleep=sleep,
        rng=random.Random(1),
    )
    assert response.text == "after the wait"
    assert len(wire.requests) == 2
    assert slept == [7.0]


@pytest.mark.parametrize(
    ("status", "error_type"),
    [(500, "api_error"), (529, "overloaded_error"), (503, "api_error")],
)
async def test_server_errors_are_retryable(wire: WireServer, status: int, error_type: str) -> None:
    wire.enqueue(anthropic_error(status, error_type, "boom"))
    with pytest.raises(ProviderError) as info:
        await ask(provider(wire.url), [ChatMessage(role="user", content="q")])
    assert info.value.retryable
    assert f"HTTP {status}" in str(info.value)
    assert error_type in str(info.value)
    assert len(wire.requests) == 1  # the SDK's own retries are off


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
    ],
)
async def test_client_errors_are_not_retryable(
    wire: WireServer, status: int, error_type: str
) -> None:
    wire.enqueue(anthropic_error(status, error_type, "no", {"retry-after": "3"}))
    with pytest.raises(ProviderError) as info:
        await ask(provider(wire.url), [ChatMessage(role="user", content="q")])
    assert not info.value.retryable
    assert info.value.retry_after is None


async def test_hung_server_times_out_as_retryable(wire: WireServer) -> None:
    wire.enqueue(Reply(body=anthropic_message("too late"), delay=30))
    with pytest.raises(ProviderError) as info:
        await ask(provider(wire.url, timeout=0.3), [ChatMessage(role="user", content="q")])
    assert info.value.retryable
    assert "timeout" in str(info.value)


async def test_connection_refused_is_retryable() -> None:
    with pytest.raises(ProviderError) as info:
        await ask(provider(closed_port_url(), timeout=2), [ChatMessage(role="user", content="q")])
    assert info.value.retryable
    assert "connection" in str(info.value)


async def test_non_object_tool_input_sets_parse_error(wire: WireServer) -> None:
    wire.enqueue(Reply(body=anthropic_message(tool_uses=[("toolu_9", "sql_query", "SELECT")])))
    response = await ask(provider(wire.url), [ChatMessage(role="user", content="q")], [SQL_TOOL])
    call = response.tool_calls[0]
    assert call.parse_error is not None
    assert call.raw_arguments == '"SELECT"'
    assert call.arguments == {}


async def test_empty_assistant_turns_are_dropped(wire: WireServer) -> None:
    wire.enqueue(Reply(body=anthropic_message("ok")))
    messages = [
        ChatMessage(role="user", content="q"),
        ChatMessage(role="assistant", content=""),
        ChatMessage(role="user", content="again"),
    ]
    await ask(provider(wire.url), messages)
    sent = wire.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["user", "user"]


@pytest.mark.parametrize("body", [b"<html>bad gateway</html>", b"", {"unexpected": True}])
async def test_malformed_2xx_body_is_retryable(wire: WireServer, body: object) -> None:
    wire.enqueue(Reply(body=body))
    with pytest.raises(ProviderError) as info:
        await ask(provider(wire.url), [ChatMessage(role="user", content="q")])
    assert info.value.retryable
    assert "malformed response" in str(info.value)
