"""The kibana target against a local server following the converse contract: sync and SSE
rounds, multi-turn, spaces, headers, set-up of tools and agents, and every failure mode
surfacing as a HarnessError with its cause."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.elastic.fake_kibana import FakeKibana, Scripted, tabular, tool_step

from dabench.errors import HarnessError
from dabench.targets.base import TargetContext
from dabench.targets.kibana import KibanaTarget, KibanaTargetConfig
from dabench.targets.kibana.client import iter_sse
from dabench.targets.kibana.wire import StreamAccumulator, parse_sync_response, render_result
from dabench.targets.registry import make_target

ESQL = "FROM dabench-sales.stores | STATS n = COUNT(*)"
STEPS = [
    {"type": "reasoning", "reasoning": "Counting the stores."},
    tool_step("platform.core.execute_esql", {"query": ESQL}, [tabular(ESQL, ["n"], [[42]])]),
]


def answer_42(body: dict[str, Any]) -> Scripted:
    return Scripted(message="There are 42 stores.\nFINAL ANSWER: 42", steps=STEPS)


def make(server: FakeKibana, tmp_path: Path, **cfg: Any) -> KibanaTarget:
    raw = {"kind": "kibana", "url": server.url, "api_key": "test-key", **cfg}
    target = make_target(raw, TargetContext(world_dir=None, work_dir=tmp_path))
    assert isinstance(target, KibanaTarget)
    return target


@pytest.mark.parametrize("stream", [True, False])
async def test_round_captures_steps_usage_and_ids(tmp_path: Path, stream: bool) -> None:
    with FakeKibana(answer_42) as server:
        target = make(server, tmp_path)
        await target.start()
        try:
            session = await target.open_session()
            rnd = await session.converse("How many stores?", connector_id="c1", stream=stream)
        finally:
            await target.stop()
    assert rnd.message.endswith("FINAL ANSWER: 42")
    assert rnd.conversation_id == "conv-1" and rnd.round_id == "conv-1-round-1"
    assert session.handle == "conv-1"
    assert [s.tool_id for s in rnd.tool_steps] == ["platform.core.execute_esql"]
    step = rnd.tool_steps[0]
    assert step.params == {"query": ESQL} and not step.is_error
    assert "42" in step.text() and ESQL in step.text()
    assert rnd.reasoning == ["Counting the stores."]
    assert rnd.model_usage is not None and rnd.model_usage["input_tokens"] == 1200
    assert rnd.reported_ttft_ms == 850
    assert (rnd.measured_ttft_ms is not None) == stream
    body = server.converse_bodies()[0]
    assert body == {
        "input": "How many stores?",
        "agent_id": "elastic-ai-agent",
        "connector_id": "c1",
    }
    headers = server.requests[-1]["headers"]
    assert headers["Authorization"] == "ApiKey test-key" and headers["kbn-xsrf"]
    assert target.describe()["kibana_version"] == "9.3.0"


async def test_multi_turn_carries_the_conversation_id_and_space(tmp_path: Path) -> None:
    with FakeKibana(answer_42) as server:
        target = make(server, tmp_path, space="bench", agent_id="my-agent")
        await target.start()
        try:
            session = await target.open_session()
            await session.converse("first", connector_id=None)
            await session.converse("second", connector_id=None, stream=False)
        finally:
            await target.stop()
    first, second = server.converse_bodies()
    assert "conversation_id" not in first and "connector_id" not in first
    assert second["conversation_id"] == "conv-1" and second["agent_id"] == "my-agent"
    assert server.conversations == {"conv-1": ["first", "second"]}
    assert {r["space"] for r in server.requests} == {"bench"}


async def test_stream_without_steps_in_round_complete_uses_the_events(tmp_path: Path) -> None:
    def respond(body: dict[str, Any]) -> Scripted:
        return Scripted(message="FINAL ANSWER: 42", steps=STEPS, round_steps=False)

    with FakeKibana(respond) as server:
        target = make(server, tmp_path)
        await target.start()
        try:
            rnd = await (await target.open_session()).converse("q", connector_id="c")
        finally:
            await target.stop()
    assert [s.tool_id for s in rnd.tool_steps] == ["platform.core.execute_esql"]
    assert "42" in rnd.tool_steps[0].text()
    assert rnd.reasoning == ["Counting the stores."]


@pytest.mark.parametrize(
    ("script", "stream", "cause"),
    [
        (Scripted(http_status=500), False, "HTTP 500: connector failed"),
        (Scripted(http_status=502), True, "HTTP 502: connector failed"),
        (Scripted(steps=STEPS, stream_error="connector timed out"), True, "connector timed out"),
        (Scripted(steps=STEPS, truncate=True), True, "ended before round_complete"),
        (Scripted(message="late", delay_s=1.5), False, "timed out"),
    ],
)
async def test_failures_are_harness_errors_with_their_cause(
    tmp_path: Path, script: Scripted, stream: bool, cause: str
) -> None:
    with FakeKibana(lambda body: script) as server:
        target = make(server, tmp_path, request_timeout_s=0.5)
        await target.start()
        try:
            session = await target.open_session()
            with pytest.raises(HarnessError, match=cause):
                await session.converse("q", connector_id="c", stream=stream)
        finally:
            await target.stop()


async def test_bad_key_and_tool_calls_are_harness_errors(tmp_path: Path) -> None:
    with FakeKibana(answer_42) as server:
        bad = make(server, tmp_path, api_key="wrong")
        with pytest.raises(HarnessError, match="HTTP 401"):
            await bad.start()
        target = make(server, tmp_path)
        await target.start()
        try:
            session = await target.open_session()
            with pytest.raises(HarnessError, match="own agent loop"):
                await session.call("sql_query", {"sql": "SELECT 1"})
        finally:
            await target.stop()


async def test_setup_registers_tools_and_agent_then_updates_them(tmp_path: Path) -> None:
    tool = {
        "id": "dabench.count_stores",
        "type": "esql",
        "description": "Count the stores",
        "configuration": {"query": ESQL, "params": {}},
    }
    agent = {"id": "dabench-agent", "name": "dabench", "instructions": "Be precise.",
             "tool_ids": ["dabench.count_stores", "platform.core.search"]}  # fmt: skip
    with FakeKibana(answer_42) as server:
        for expected in ("created", "updated"):
            target = make(server, tmp_path, tools=[tool], agent=agent)
            await target.start()
            await (await target.open_session()).converse("q", connector_id="c")
            await target.stop()
            assert target.describe()["setup"] == {
                "tool:dabench.count_stores": expected,
                "agent:dabench-agent": expected,
            }
        assert server.tools["dabench.count_stores"]["configuration"]["query"] == ESQL
        created = server.agents["dabench-agent"]
        assert created["configuration"]["tools"] == [{"tool_ids": agent["tool_ids"]}]
        assert created["configuration"]["instructions"] == "Be precise."
        assert server.converse_bodies()[-1]["agent_id"] == "dabench-agent"
        puts = [r for r in server.requests if r["method"] == "PUT"]
        assert {r["path"] for r in puts} == {
            "/api/agent_builder/tools/dabench.count_stores",
            "/api/agent_builder/agents/dabench-agent",
        }
        assert all("id" not in r["body"] for r in puts)


def test_sync_body_without_model_usage_and_malformed_bodies() -> None:
    rnd = parse_sync_response(
        {
            "conversation_id": "c",
            "round_id": "r",
            "steps": [{"type": "future_step"}],
            "response": {"message": "ok"},
        }
    )
    assert rnd.model_usage is None and rnd.reported_ttft_ms is None and rnd.message == "ok"
    with pytest.raises(HarnessError, match=r"no response\.message"):
        parse_sync_response({"conversation_id": "c"})
    with pytest.raises(HarnessError, match="non-object"):
        parse_sync_response(["x"])


async def test_sse_frames_comments_and_multiline_data() -> None:
    async def lines() -> Any:
        for line in [": keep-alive", "event: a", 'data: {"x":', "data: 1}", "", "data: 2", ""]:
            yield line

    frames = [f async for f in iter_sse(lines())]
    assert frames == [("a", '{"x":\n1}'), ("message", "2")]


def test_error_results_and_renderings() -> None:
    acc = StreamAccumulator()
    acc.feed("tool_call", {"data": {"tool_call_id": "t", "tool_id": "platform.core.search",
                                    "params": {"query": "x"}}}, 1.0)  # fmt: skip
    acc.feed("tool_result", {"data": {"tool_call_id": "t", "results": [
        {"type": "error", "data": {"message": "Could not figure out which index to use"}}]}},
        2.0)  # fmt: skip
    acc.feed("round_complete", {"data": {"round": {"id": "r", "response": {"message": "no"}}}}, 3)
    rnd = acc.finish()
    assert rnd.tool_steps[0].is_error
    assert rnd.tool_steps[0].text() == "error: Could not figure out which index to use"
    assert rnd.model_usage is None
    big = tabular("FROM t", ["a"], [[i] for i in range(250)])
    text = render_result(big)
    assert "[... 50 more rows]" in text and "(250 rows)" in text
    resource = {"type": "resource", "data": {"reference": {"id": "1", "index": "kb"},
                                             "content": {"title": "Fiscal year"}}}  # fmt: skip
    assert render_result(resource) == 'resource kb/1: {"title": "Fiscal year"}'


def test_config_is_validated() -> None:
    with pytest.raises(Exception, match="type"):
        KibanaTargetConfig.model_validate(
            {
                "kind": "kibana",
                "tools": [{"id": "t", "type": "workflow", "description": "d", "configuration": {}}],
            }
        )
