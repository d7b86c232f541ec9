"""OpenAICompatProvider against a local server speaking the Chat Completions wire format."""

from __future__ import annotations

import random

import pytest

from dabench.providers import (
    ChatMessage,
    ModelResponse,
    ProviderError,
    RetryPolicy,
    ToolCallRequest,
    ToolResultContent,
    ToolSpec,
    make_provider,
    with_retries,
)
from dabench.providers.openai_compat import OpenAICompatProvider, parse_tool_call

from .servers import (
    SQL_TOOL,
    Reply,
    WireServer,
    closed_port_url,
    openai_completion,
    openai_error,
)


def provider(spec: str, url: str, **settings: object) -> OpenAICompatProvider:
    made = make_provider(spec, base_url=f"{url}/v1", api_key="sk-test", **settings)
    assert isinstance(made, OpenAICompatProvider)
    return made


async def ask(
    p: OpenAICompatProvider, messages: list[ChatMessage], tools: list[ToolSpec] | None = None
) -> ModelResponse:
    return await p.complete(
        messages, system="Be brief.", tools=tools or [], max_tokens=128, temperature=0.0
    )


async def test_plain_text_and_request_shape(wire: WireServer) -> None:
    wire.enqueue(Reply(body=openai_completion("Hello.")))
    response = await ask(
        provider("openai:gpt-4.1", wire.url), [ChatMessage(role="user", content="Hi")]
    )
    assert response.text == "Hello."
    assert response.stop_reason == "stop"
    assert response.model == "gpt-4.1-2025-04-14"
    request = wire.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body["model"] == "gpt-4.1"
    assert request.body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    # OpenAI's newer models take max_completion_tokens; other servers take max_tokens.
    assert request.body["max_completion_tokens"] == 128
    assert "max_tokens" not in request.body
    assert request.body["temperature"] == 0.0
    assert "tools" not in request.body
    assert "usage" not in request.body


async def test_local_kinds_send_max_tokens_and_need_no_key(wire: WireServer) -> None:
    wire.enqueue(Reply(body=openai_completion("ok")))
    p = make_provider("ollama:qwen2.5:7b", base_url=f"{wire.url}/v1")
    assert p.model == "qwen2.5:7b"
    await p.complete(
        [ChatMessage(role="user", content="q")], system="", tools=[], max_tokens=64, temperature=0
    )
    body = wire.requests[0].body
    assert body["model"] == "qwen2.5:7b"
    assert body["max_tokens"] == 64
    assert body["messages"] == [{"role": "user", "content": "q"}]


async def test_tool_calls_response(wire: WireServer) -> None:
    wire.enqueue(
        Reply(
            body=openai_completion(
                tool_calls=[
                    ("call_1", "sql_query", '{"sql": "SELECT 1"}'),
                    ("call_2", "search", "{}"),
                ]
            )
        )
    )
    response = await ask(
        provider("vllm:qwen", wire.url), [ChatMessage(role="user", content="q")], [SQL_TOOL]
    )
    assert response.stop_reason == "tool_calls"
    assert response.text == ""
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_1", "sql_query", {"sql": "SELECT 1"}),
        ("call_2", "search", {}),
    ]
    assert response.tool_calls[0].raw_arguments == '{"sql": "SELECT 1"}'
    assert wire.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "sql_query",
                "description": "Run SQL",
                "parameters": SQL_TOOL.input_schema,
            },
        }
    ]


async def test_tool_result_round_trip_shape(wire: WireServer) -> None:
    wire.enqueue(Reply(body=openai_completion("3 rows")))
    messages = [
        ChatMessage(role="user", content="How many?"),
        ChatMessage(
            role="assistant",
            tool_calls=[
                ToolCallRequest(
                    id="call_1",
                    name="sql_query",
                    arguments={"sql": "S"},
                    raw_arguments='{"sql":"S"}',
                ),
                ToolCallRequest(id="call_2", name="search", raw_arguments="{bad", parse_error="x"),
            ],
        ),
        ChatMessage(
            role="tool",
            tool_results=[
                ToolResultContent(tool_call_id="call_1", content="3"),
                ToolResultContent(tool_call_id="call_2", content="bad JSON", is_error=True),
            ],
        ),
    ]
    response = await ask(provider("llamacpp:local", wire.url), messages, [SQL_TOOL])
    assert response.text == "3 rows"
    sent = wire.requests[0].body["messages"]
    assert sent[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "sql_query", "arguments": '{"sql":"S"}'},
            },
            # A malformed call is replayed with the (empty) parsed arguments, not the bad JSON.
            {"id": "call_2", "type": "function", "function": {"name": "search", "arguments": "{}"}},
        ],
    }
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": "3"}
    assert sent[4] == {"role": "tool", "tool_call_id": "call_2", "content": "ERROR: bad JSON"}


async def test_malformed_tool_arguments_never_raise(wire: WireServer) -> None:
    wire.enqueue(
        Reply(
            body=openai_completion(
                tool_calls=[
                    ("call_1", "sql_query", '{"sql": "SELECT 1"'),
                    ("call_2", "sql_query", '["not", "an", "object"]'),
                    ("call_3", "sql_query", ""),
                ]
            )
        )
    )
    response = await ask(
        provider("openai-compat:m", wire.url), [ChatMessage(role="user", content="q")], [SQL_TOOL]
    )
    bad, array, empty = response.tool_calls
    assert bad.parse_error is not None and "invalid JSON" in bad.parse_error
    assert bad.raw_arguments == '{"sql": "SELECT 1"'
    assert bad.arguments == {}
    assert array.parse_error is not None and "list" in array.parse_error
    assert empty.parse_error is None and empty.arguments == {}


def test_parse_tool_call_accepts_object_arguments() -> None:
    call = parse_tool_call({"id": "c", "function": {"name": "f", "arguments": {"a": 1}}})
    assert call.arguments == {"a": 1}
    assert call.parse_error is None


async def test_cached_tokens_become_cache_read(wire: WireServer) -> None:
    wire.enqueue(
        Reply(
            body=openai_completion(
                "ok", prompt_tokens=1000, completion_tokens=100, cached_tokens=600
            )
        )
    )
    response = await ask(
        provider("openai:gpt-4.1", wire.url), [ChatMessage(role="user", content="q")]
    )
    assert response.usage.input == 400
    assert response.usage.cache_read == 600
    assert response.usage.output == 100
    assert response.cost_source == "price_table"
    # gpt-4.1: $2 in, $0.50 cached, $8 out per MTok.
    assert response.cost_usd == pytest.approx((400 * 2 + 600 * 0.5 + 100 * 8) / 1e6)


async def test_openrouter_reported_cost_wins(wire: WireServer) -> None:
    wire.enqueue(
        Reply(
            body=openai_completion(
                "ok",
                model="anthropic/claude-sonnet-4.6",
                prompt_tokens=194,
                completion_tokens=2,
                cached_tokens=0,
                cost=0.00123,
                extra_usage={
                    "prompt_tokens_details": {"cached_tokens": 50, "cache_write_tokens": 100}
                },
            )
        )
    )
    p = provider("openrouter:anthropic/claude-sonnet-4.6", wire.url)
    response = await ask(p, [ChatMessage(role="user", content="q")])
    assert response.cost_usd == pytest.approx(0.00123)
    assert response.cost_source == "provider"
    assert (response.usage.input, response.usage.cache_read, response.usage.cache_write) == (
        44,
        50,
        100,
    )
    assert wire.requests[0].body["usage"] == {"include": True}
    assert wire.requests[0].body["max_tokens"] == 128


async def test_unpriced_model_has_no_cost(wire: WireServer) -> None:
    wire.enqueue(Reply(body=openai_completion("ok", model="qwen")))
    response = await ask(provider("vllm:qwen", wire.url), [ChatMessage(role="user", content="q")])
    assert response.cost_usd is None
    assert response.cost_source == "none"


async def test_429_with_retry_after_ms_then_success(wire: WireServer) -> None:
    wire.enqueue(
        openai_error(
            429,
            "Rate limit reached",
            error_type="rate_limit_error",
            headers={"retry-after-ms": "1500"},
        ),
        openai_error(429, "Rate limit reached", headers={"retry-after": "2"}),
        Reply(body=openai_completion("finally")),
    )
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    p = provider("openai:gpt-4.1", wire.url)
    response = await with_retries(
        lambda: ask(p, [ChatMessage(role="user", content="q")]),
        RetryPolicy(max_attempts=5, base_delay=0.1, max_delay=1.0),
        sleep=sleep,
        rng=random.Random(3),
    )
    assert response.text == "finally"
    assert len(wire.requests) == 3
    assert slept == [1.5, 2.0]


async def test_500_is_retryable_and_exhausts(wire: WireServer) -> None:
    wire.enqueue(*[openai_error(500, "internal") for _ in range(3)])
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    p = provider("openai:gpt-4.1", wire.url)
    with pytest.raises(ProviderError) as info:
        await with_retries(
            lambda: ask(p, [ChatMessage(role="user", content="q")]),
            RetryPolicy(max_attempts=3, base_delay=1.0, jitter=False),
            sleep=sleep,
        )
    assert info.value.retryable
    assert "HTTP 500: internal" in str(info.value)
    assert len(wire.requests) == 3
    assert slept == [1.0, 2.0]


async def test_401_is_not_retried(wire: WireServer) -> None:
    wire.enqueue(openai_error(401, "Incorrect API key", error_type="invalid_request_error"))
    p = provider("openai:gpt-4.1", wire.url)
    with pytest.raises(ProviderError) as info:
        await with_retries(
            lambda: ask(p, [ChatMessage(role="user", content="q")]), RetryPolicy(max_attempts=4)
        )
    assert not info.value.retryable
    assert len(wire.requests) == 1


async def test_hung_server_times_out_as_retryable(wire: WireServer) -> None:
    wire.enqueue(Reply(body=openai_completion("late"), delay=30))
    p = provider("openai:gpt-4.1", wire.url, timeout=0.3)
    with pytest.raises(ProviderError) as info:
        await ask(p, [ChatMessage(role="user", content="q")])
    assert info.value.retryable
    assert "timeout" in str(info.value)


async def test_connection_refused_is_retryable() -> None:
    p = make_provider("ollama:x", base_url=f"{closed_port_url()}/v1", timeout=2)
    with pytest.raises(ProviderError) as info:
        await p.complete(
            [ChatMessage(role="user", content="q")],
            system="",
            tools=[],
            max_tokens=8,
            temperature=0,
        )
    assert info.value.retryable


async def test_error_body_with_200_is_a_retryable_error(wire: WireServer) -> None:
    wire.enqueue(
        Reply(body={"error": {"message": "upstream overloaded", "code": 502}, "choices": []})
    )
    with pytest.raises(ProviderError) as info:
        await ask(provider("openrouter:x/y", wire.url), [ChatMessage(role="user", content="q")])
    assert info.value.retryable
    assert "upstream overloaded" in str(info.value)


async def test_empty_assistant_turns_are_dropped(wire: WireServer) -> None:
    wire.enqueue(Reply(body=openai_completion("ok")))
    messages = [
        ChatMessage(role="user", content="q"),
        ChatMessage(role="assistant", content=""),
        ChatMessage(role="user", content="again"),
    ]
    await ask(provider("vllm:m", wire.url), messages)
    sent = wire.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "user"]


@pytest.mark.parametrize("body", [b"<html>bad gateway</html>", b""])
async def test_malformed_2xx_body_is_retryable(wire: WireServer, body: bytes) -> None:
    wire.enqueue(Reply(body=body))
    with pytest.raises(ProviderError) as info:
        await ask(provider("openai:gpt-4.1", wire.url), [ChatMessage(role="user", content="q")])
    assert info.value.retryable
    assert "malformed response" in str(info.value)


async def test_temperature_can_be_left_out(wire: WireServer) -> None:
    wire.enqueue(Reply(body=openai_completion("ok")))
    p = provider("openai:gpt-5", wire.url, send_temperature=False)
    await ask(p, [ChatMessage(role="user", content="q")])
    assert "temperature" not in wire.requests[0].body
