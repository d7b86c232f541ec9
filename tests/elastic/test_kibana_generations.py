"""The kibana target against the documented shapes of three Kibana generations (9.2's
``onechat``, 9.3's ``agent_builder`` and current main), sync and streamed; and a set-up that
cannot race when several arms register the same tools and agent on one fresh Kibana."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.elastic.fake_kibana import GENERATIONS, FakeKibana, Scripted, tabular, tool_step
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import HarnessError
from dabench.journal.records import Episode
from dabench.targets.base import TargetContext
from dabench.targets.kibana import KibanaTarget
from dabench.targets.kibana.wire import render_result
from dabench.targets.registry import make_target

ESQL = "FROM dabench-sales.stores | STATS n = COUNT(*)"
DATA = Path(__file__).parent / "data"
PAGE = {"reference": {"index": "dabench-knowledge", "id": "page:fiscal"},
        "content": {"title": "Fiscal calendar"}}  # fmt: skip
TOOL = {"id": "dabench.store_count", "type": "esql", "description": "Count the stores",
        "configuration": {"query": ESQL, "params": {}}}  # fmt: skip
AGENT = {"id": "dabench-agent", "name": "dabench", "instructions": "Be precise.",
         "tool_ids": ["dabench.store_count", "platform.core.search"]}  # fmt: skip


def answer(body: dict[str, Any]) -> Scripted:
    """A table and a resource in one round."""
    results = [tabular(ESQL, ["n"], [[42]]), {"tool_result_id": "r2", "type": "resource",
                                              "data": PAGE}]  # fmt: skip
    steps = [tool_step("platform.core.search", {"query": "stores"}, results)]
    return Scripted(message="FINAL ANSWER: 42", steps=steps)


def make(server: FakeKibana, tmp_path: Path, shared: dict[str, Any] | None = None,
         **cfg: Any) -> KibanaTarget:  # fmt: skip
    raw = {"kind": "kibana", "url": server.url, "api_key": "test-key", **cfg}
    ctx = TargetContext(world_dir=None, work_dir=tmp_path, shared={} if shared is None else shared)
    target = make_target(raw, ctx)
    assert isinstance(target, KibanaTarget)
    return target


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("generation", GENERATIONS)
async def test_results_usage_and_turns_per_generation(
    tmp_path: Path, generation: str, stream: bool
) -> None:
    with FakeKibana(answer, generation=generation) as server:
        target = make(server, tmp_path)
        await target.start()
        try:
            session = await target.open_session()
            first = await session.converse("How many?", connector_id="c", stream=stream)
            second = await session.converse("And again?", connector_id="c", stream=stream)
        finally:
            await target.stop()
    assert target.version and target.version.startswith({"9.2": "9.2", "9.3": "9.3"}.get(
        generation, "9.4"))  # fmt: skip
    assert first.conversation_id == second.conversation_id == "conv-1"
    text = first.tool_steps[0].text()
    table_type = "esql_results" if generation == "main" else "tabular_data"
    assert f"{table_type}:\nquery: {ESQL}\nn\n42\n(1 rows)" in text
    assert "resource dabench-knowledge/page:fiscal: " in text and "Fiscal calendar" in text
    if generation == "main":
        assert "resource_list: 1 resources" in text
    if generation == "9.2":  # no usage and no timings reported: unknown, never 0
        assert first.model_usage is None and first.reported_ttft_ms is None
    else:
        assert first.model_usage is not None and first.reported_ttft_ms == 850
    assert (first.measured_ttft_ms is not None) == stream


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("generation", GENERATIONS)
async def test_a_lost_conversation_is_a_harness_error(
    tmp_path: Path, generation: str, stream: bool
) -> None:
    cause = {
        "9.2": "HTTP 404: Conversation conv-missing" if not stream else "conversationNotFound",
        "9.3": "HTTP 404: Conversation conv-missing" if not stream else "conversationNotFound",
        "main": "answered in conversation 'conv-1', not 'conv-missing'",
    }[generation]
    with FakeKibana(answer, generation=generation) as server:
        target = make(server, tmp_path)
        await target.start()
        try:
            session = await target.open_session()
            session.conversation_id = "conv-missing"
            with pytest.raises(HarnessError, match=cause):
                await session.converse("q", connector_id="c", stream=stream)
        finally:
            await target.stop()


def test_older_tabular_shape_and_resource_list_render() -> None:
    old = {"type": "tabular_data", "data": {"esqlQuery": ESQL, "esqlResult": {
        "columns": [{"name": "n", "type": "long"}], "values": [[7], [8]]}}}  # fmt: skip
    assert render_result(old) == f"tabular_data:\nquery: {ESQL}\nn\n7\n8\n(2 rows)"
    listed = {"type": "resource_list", "data": {"resources": [PAGE, PAGE]}}
    lines = render_result(listed).splitlines()
    assert lines[0] == "resource_list: 2 resources" and len(lines) == 3
    assert lines[1].startswith("resource dabench-knowledge/page:fiscal: ")


@pytest.mark.parametrize("arms", [2, 4])
async def test_arms_sharing_a_fresh_kibana_register_once(tmp_path: Path, arms: int) -> None:
    with FakeKibana(answer) as server:
        shared: dict[str, Any] = {}
        targets = [
            make(server, tmp_path / str(i), shared, tools=[TOOL], agent=AGENT) for i in range(arms)
        ]
        await asyncio.gather(*(t.start() for t in targets))
        await asyncio.gather(*(t.stop() for t in targets))
        posts = [r["path"] for r in server.requests if r["method"] == "POST"]
    assert posts.count("/api/agent_builder/tools") == 1
    assert posts.count("/api/agent_builder/agents") == 1
    setups = sorted(tuple(sorted(t.describe()["setup"].values())) for t in targets)
    assert setups == [("created", "created")] + [("shared", "shared")] * (arms - 1)


async def test_a_post_refused_as_existing_falls_back_to_put(tmp_path: Path) -> None:
    """Two runs (no shared registry) racing on one fresh Kibana: the loser's POST is refused
    ("already exists") and it updates with PUT instead."""
    with FakeKibana(answer) as server:
        targets = [make(server, tmp_path / str(i), tools=[TOOL], agent=AGENT) for i in range(4)]
        await asyncio.gather(*(t.start() for t in targets))
        await asyncio.gather(*(t.stop() for t in targets))
        refused = [r for r in server.requests if r["method"] == "POST"]
    assert server.tools["dabench.store_count"]["configuration"]["query"] == ESQL
    assert all(set(t.describe()["setup"].values()) <= {"created", "updated"} for t in targets)
    assert len(refused) >= 2  # one create per id at least


async def test_two_arms_defining_one_id_differently_are_refused(tmp_path: Path) -> None:
    other = {**TOOL, "description": "Something else"}
    with FakeKibana(answer) as server:
        shared: dict[str, Any] = {}
        first = make(server, tmp_path / "a", shared, tools=[TOOL])
        second = make(server, tmp_path / "b", shared, tools=[other])
        await first.start()
        with pytest.raises(HarnessError, match="defined differently"):
            await second.start()
        await first.stop()
        await second.stop()


def test_fake_kibana_validates_bodies_as_kibana_does(tmp_path: Path) -> None:
    import httpx

    headers = {"Authorization": "ApiKey test-key", "kbn-xsrf": "x"}
    with FakeKibana(answer) as server:
        post = httpx.post(f"{server.url}/api/agent_builder/tools", json={**TOOL, "x": 1},
                          headers=headers)  # fmt: skip
        assert post.status_code == 400 and "[request body.x]" in post.json()["message"]
        ok = httpx.post(f"{server.url}/api/agent_builder/tools", json=TOOL, headers=headers)
        again = httpx.post(f"{server.url}/api/agent_builder/tools", json=TOOL, headers=headers)
        assert ok.status_code == 200 and again.status_code == 400
        assert again.json()["message"] == "Tool with id dabench.store_count already exists"
        put = httpx.put(f"{server.url}/api/agent_builder/tools/{TOOL['id']}", json=TOOL,
                        headers=headers)  # fmt: skip
        assert put.status_code == 400 and "[request body.id]" in put.json()["message"]


@pytest.mark.parametrize("attempt", range(3))
def test_two_arm_run_against_a_fresh_kibana_succeeds(
    tmp_path: Path, world_dir: Path, monkeypatch: pytest.MonkeyPatch, attempt: int
) -> None:
    """The reproduction of the set-up race: two arms registering the same tool and agent on a
    fresh Kibana that refuses duplicate POSTs. Every attempt must run every episode."""
    monkeypatch.setenv("FAKE_KIBANA_KEY", "test-key")

    def respond(body: dict[str, Any]) -> Scripted:
        return Scripted(message="FINAL ANSWER: 1")

    with FakeKibana(respond) as server:
        target = {"kind": "kibana", "url": server.url, "api_key": "${FAKE_KIBANA_KEY}",
                  "tools": [TOOL], "agent": AGENT}  # fmt: skip
        exp = {
            "name": "race",
            "world": {"dir": str(world_dir)},
            "tasks": {"builtin": False, "files": [str(DATA / "tasks.yaml")]},
            "k": 1,
            "concurrency": 4,
            "arms": [
                {"name": n, "target": target, "agent": {"kind": "kibana", "connector_id": n}}
                for n in ("one", "two")
            ],
        }
        path = tmp_path / "exp.yaml"
        path.write_text(yaml.safe_dump(exp), encoding="utf-8")
        out = tmp_path / "run"
        result = CliRunner().invoke(app, ["run", str(path), "--out", str(out), "--no-progress"])
    assert result.exit_code in (0, 1), result.output  # 1: answers graded wrong, not a crash
    episodes = [Episode.model_validate_json(line) for line in (out / "episodes.jsonl").open()]
    assert len(episodes) == 2 * 3 and all(e.status != "harness_error" for e in episodes)


@pytest.mark.parametrize("stream", [True, False])
async def test_a_conversation_recreated_under_the_same_id_is_a_harness_error(
    tmp_path: Path, stream: bool
) -> None:
    """Kibana main may lose a conversation and re-create it under the same id: the later turn
    is then answered without the earlier ones. The stream's creation event (streamed) or the
    conversation's history length (sync) gives it away."""
    cause = "announced a new conversation on turn 3" if stream else "history holds 1 round"
    with FakeKibana(answer, generation="main", lost_same_id=True) as server:
        target = make(server, tmp_path)
        await target.start()
        try:
            session = await target.open_session()
            first = await session.converse("q1", connector_id="c", stream=stream)
            assert first.conversation_id == "conv-1"
            second = await session.converse("q2", connector_id="c", stream=stream)
            assert second.conversation_id == "conv-1"  # kept: nothing was lost
            server.forget("conv-1")
            with pytest.raises(HarnessError, match=f"re-created it under the same id.*{cause}"):
                await session.converse("q3", connector_id="c", stream=stream)
        finally:
            await target.stop()
