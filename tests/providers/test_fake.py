"""FakeProvider: the scripted tool loop, latency, injected failures, spec parsing."""

from __future__ import annotations

import pytest

from dabench.errors import UserInputError
from dabench.providers import (
    ChatMessage,
    FakeProvider,
    ModelResponse,
    ProviderError,
    RetryPolicy,
    ToolResultContent,
    ToolSpec,
    make_provider,
    with_retries,
)
from dabench.providers.fake import parse_fake_spec, parse_latency

TOOLS = [
    ToolSpec(
        name="search",
        input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
    ),
    ToolSpec(
        name="sql_query",
        input_schema={
            "type": "object",
            "properties": {"statement": {"type": "string"}},
            "required": ["statement"],
        },
    ),
]


async def run_loop(provider: FakeProvider, tools: list[ToolSpec]) -> list[ModelResponse]:
    """A minimal agent loop: echo a result for each call until the model answers."""
    messages = [ChatMessage(role="user", content="revenue in 2024?")]
    responses = []
    for _ in range(10):
        response = await provider.complete(
            messages, system="sys", tools=tools, max_tokens=100, temperature=0
        )
        responses.append(response)
        if not response.tool_calls:
            return responses
        messages.append(ChatMessage(role="assistant", tool_calls=response.tool_calls))
        messages.append(
            ChatMessage(
                role="tool",
                tool_results=[
                    ToolResultContent(tool_call_id=c.id, content=f"result of {c.name}")
                    for c in response.tool_calls
                ],
            )
        )
    raise AssertionError("the fake provider never answered")


async def test_search_first_then_sql_then_answer() -> None:
    provider = make_provider("fake:calls=3,sql=SELECT 42")
    assert isinstance(provider, FakeProvider)
    responses = await run_loop(provider, TOOLS)
    calls = [r.tool_calls[0] for r in responses[:-1]]
    assert [(c.name, c.arguments) for c in calls] == [
        ("search", {"query": "revenue in 2024?"}),
        ("sql_query", {"statement": "SELECT 42"}),
        ("sql_query", {"statement": "SELECT 42"}),
    ]
    assert responses[-1].text == "result of sql_query"
    assert responses[-1].stop_reason == "end_turn"
    assert all(r.usage.input > 0 and r.usage.output > 0 for r in responses)


async def test_deterministic() -> None:
    first = await run_loop(make_provider("fake:calls=2"), TOOLS)  # type: ignore[arg-type]
    second = await run_loop(make_provider("fake:calls=2"), TOOLS)  # type: ignore[arg-type]
    strip = [r.model_dump(exclude={"latency_ms"}) for r in first]
    assert strip == [r.model_dump(exclude={"latency_ms"}) for r in second]


async def test_skips_tools_it_is_not_offered_and_search_off() -> None:
    only_sql = [TOOLS[1]]
    responses = await run_loop(make_provider("fake:calls=2,search=on"), only_sql)  # type: ignore[arg-type]
    assert [r.tool_calls[0].name for r in responses[:-1]] == ["sql_query", "sql_query"]
    responses = await run_loop(make_provider("fake:calls=1,search=off"), TOOLS)  # type: ignore[arg-type]
    assert [r.tool_calls[0].name for r in responses[:-1]] == ["sql_query"]
    responses = await run_loop(make_provider("fake:calls=5,answer=done"), [])  # type: ignore[arg-type]
    assert len(responses) == 1 and responses[0].text == "done"


async def test_settings_can_carry_commas() -> None:
    provider = make_provider("fake:calls=1,search=off", sql="SELECT a, b FROM t")
    responses = await run_loop(provider, TOOLS)  # type: ignore[arg-type]
    assert responses[0].tool_calls[0].arguments == {"statement": "SELECT a, b FROM t"}


async def test_latency_is_applied_per_call() -> None:
    provider = make_provider("fake:latency=30ms,calls=0")
    response = await provider.complete(
        [ChatMessage(role="user", content="q")], system="", tools=[], max_tokens=1, temperature=0
    )
    assert response.latency_ms >= 30.0


async def test_fail_first_is_retryable() -> None:
    provider = make_provider("fake:fail_first=2,calls=0,answer=ok")

    async def no_sleep(_: float) -> None:
        return None

    async def call() -> ModelResponse:
        return await provider.complete(
            [ChatMessage(role="user", content="q")],
            system="",
            tools=[],
            max_tokens=1,
            temperature=0,
        )

    with pytest.raises(ProviderError):
        await with_retries(call, RetryPolicy(max_attempts=1), sleep=no_sleep)
    response = await with_retries(call, RetryPolicy(max_attempts=3), sleep=no_sleep)
    assert response.text == "ok"


def test_spec_parsing() -> None:
    assert parse_latency("200ms") == pytest.approx(0.2)
    assert parse_latency("1.5s") == 1.5
    assert parse_latency("0") == 0.0
    with pytest.raises(UserInputError, match=r"expected e\.g\. 200ms"):
        parse_latency("200")
    settings = parse_fake_spec("latency=5ms, calls=4, search=off")
    assert (settings.latency, settings.calls, settings.search) == (0.005, 4, False)
    assert parse_fake_spec("scripted") == parse_fake_spec("")
    assert parse_fake_spec("smoke,calls=3").calls == 3
    with pytest.raises(UserInputError, match="expected key=value"):
        parse_fake_spec("calls=1,search")
    with pytest.raises(UserInputError, match="colour"):
        parse_fake_spec("colour=red")
    with pytest.raises(UserInputError, match="calls"):
        parse_fake_spec("calls=-1")


def test_lognormal_latency_has_the_median_and_p99_asked_for() -> None:
    provider = make_provider("fake:median=8s,p99=60s,seed=3")
    assert isinstance(provider, FakeProvider)
    draws = sorted(provider.draw_latency() for _ in range(40_000))
    assert draws[len(draws) // 2] == pytest.approx(8.0, rel=0.03)
    assert draws[int(len(draws) * 0.99)] == pytest.approx(60.0, rel=0.08)
    assert draws_of(3, 5) == draws_of(3, 5) != draws_of(4, 5)


def draws_of(seed: int, n: int) -> list[float]:
    provider = FakeProvider(parse_fake_spec(f"median=8s,p99=60s,seed={seed}"))
    return [provider.draw_latency() for _ in range(n)]


async def test_injected_429_and_5xx_are_retryable() -> None:
    messages = [ChatMessage(role="user", content="q")]
    limited = make_provider("fake:rate_429=1,retry_after=2s,calls=0")
    with pytest.raises(ProviderError, match="HTTP 429") as refused:
        await limited.complete(messages, system="", tools=[], max_tokens=1, temperature=0)
    assert refused.value.retryable and refused.value.retry_after == 2.0
    assert isinstance(limited, FakeProvider) and limited.refused_429 == 1
    assert limited.retry_after_s == 2.0 and limited.latencies == []
    failing = make_provider("fake:rate_5xx=1,latency=1ms,calls=0")
    with pytest.raises(ProviderError, match="HTTP 503") as failed:
        await failing.complete(messages, system="", tools=[], max_tokens=1, temperature=0)
    assert failed.value.retryable and failed.value.retry_after is None
    assert isinstance(failing, FakeProvider) and failing.latencies == [0.001]


def test_lognormal_spec_errors() -> None:
    settings = parse_fake_spec("median=80ms,p99=600ms,rate_429=0.01,rate_5xx=0.005,seed=7")
    assert (settings.median, settings.p99, settings.seed) == (0.08, 0.6, 7)
    with pytest.raises(UserInputError, match="median and p99 go together"):
        parse_fake_spec("median=1s")
    with pytest.raises(UserInputError, match="below the median"):
        parse_fake_spec("median=2s,p99=1s")
    with pytest.raises(UserInputError, match="one or the other"):
        parse_fake_spec("latency=1s,median=1s,p99=2s")
    with pytest.raises(UserInputError, match="rate_429"):
        parse_fake_spec("rate_429=2")
