"""The kibana agent end to end: arms that differ only by connector, run against a local
Agent Builder server, graded and reported with the seed-003 scores; episode records carry
tool calls, usage, cost, time to first token and the rounds; failures are harness errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.elastic.fake_kibana import DEFAULT_USAGE, FakeKibana, Scripted, tabular, tool_step
from typer.testing import CliRunner

from dabench.agents.base import EpisodeRequest, EpisodeTranscript
from dabench.agents.kibana import KibanaAgent, KibanaAgentConfig, usage_of
from dabench.cli import app
from dabench.errors import HarnessError, UserInputError
from dabench.grading.tools import check_tool_overlap
from dabench.journal.records import Episode, Grade
from dabench.runner.experiment import load_experiment
from dabench.targets.base import TargetContext
from dabench.targets.kibana import KibanaTarget
from dabench.targets.registry import make_target
from dabench.tasks.loader import load_tasks
from dabench.world import load_world

DATA = Path(__file__).parent / "data"
EXAMPLE = Path(__file__).parents[2] / "examples" / "elastic_models.yaml"
ESQL = "FROM dabench-sales.stores | STATS n = COUNT(*)"


def truths(world_dir: Path) -> dict[str, str]:
    """Prompt fragment -> correct answer, from the world."""
    con = load_world(world_dir).connect()
    stores = con.execute("SELECT count(*) FROM sales.stores").fetchone()
    channels = con.execute("SELECT count(*) FROM sales.channels").fetchone()
    con.close()
    assert stores and channels
    return {
        "retail stores does": str(stores[0]),
        "How many sales channels": str(channels[0]),
        "Which table lists": "sales.stores",
        "look at our sales channels": "Sure, what would you like to know?",
    }


def make_responder(answers: dict[str, str]) -> Any:
    """``good`` answers correctly with an ES|QL step; ``bad`` is off by one without tools and
    reports no model_usage (an older Kibana); ``broken`` fails with HTTP 500."""

    def respond(body: dict[str, Any]) -> Scripted:
        prompt = body["input"]
        answer = next(a for frag, a in answers.items() if frag in prompt)
        connector = body.get("connector_id")
        if connector == "broken":
            return Scripted(http_status=500)
        if connector == "bad":
            wrong = str(int(answer) + 1) if answer.isdigit() else "sales.orders"
            return Scripted(message=f"FINAL ANSWER: {wrong}", model_usage=None)
        if answer.isdigit():
            results = [tabular(ESQL, ["n"], [[int(answer)]])]
            steps = [tool_step("platform.core.execute_esql", {"query": ESQL}, results)]
        else:
            ref = {"index": "dabench-knowledge", "id": "dataset:sales.stores"}
            found = {"type": "resource", "data": {"reference": ref, "content": {"ref": answer}}}
            steps = [tool_step("platform.core.search", {"query": "stores"}, [found])]
        return Scripted(message=f"I counted.\nFINAL ANSWER: {answer}", steps=steps)

    return respond


def experiment(tmp_path: Path, world_dir: Path, url: str) -> Path:
    arms = []
    for name in ("good", "bad", "broken"):
        arms.append(
            {
                "name": name,
                "target": {
                    "kind": "kibana",
                    "url": url,
                    "api_key": "${FAKE_KIBANA_KEY}",
                    "retry": {"max_attempts": 3, "base_delay": 0.0},
                },
                "agent": {
                    "kind": "kibana",
                    "connector_id": name,
                    "price_model": "anthropic:claude-sonnet-4-5",
                },
            }
        )
    exp = {
        "name": "elastic-test",
        "world": {"dir": str(world_dir)},
        "tasks": {"builtin": False, "files": [str(DATA / "tasks.yaml")]},
        "k": 2,
        "concurrency": 4,
        "episode_timeout_s": 60,
        "arms": arms,
    }
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp), encoding="utf-8")
    return path


def test_run_grade_report_with_seed003_scores(
    tmp_path: Path, world_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KIBANA_KEY", "test-key")
    with FakeKibana(make_responder(truths(world_dir))) as server:
        transient = [server.fail(429, retry_after="0"), server.fail(503)]  # lose nothing
        exp = experiment(tmp_path, world_dir, server.url)
        out = tmp_path / "run"
        result = CliRunner().invoke(app, ["run", str(exp), "--out", str(out), "--no-progress"])
    assert [f.times for f in transient] == [0, 0]
    assert result.exit_code == 3, result.output  # harness errors (the broken connector)
    assert "harness error broken/es.store-count/0: kibana: POST" in result.output
    assert "no model used" not in result.output
    episodes = [Episode.model_validate_json(line) for line in (out / "episodes.jsonl").open()]
    assert len(episodes) == 3 * 3 * 2
    # the 429 and the 503 were retried and recorded on the episodes they delayed (on the round
    # too, unless the round then failed: a fault can land on the broken arm's request)
    assert sum(e.transient_retries for e in episodes) == 2
    assert all(
        e.transient_retries == sum(r.retries for r in e.rounds)
        for e in episodes
        if e.status != "harness_error"
    )
    by_arm: dict[str, list[Episode]] = {}
    for ep in episodes:
        by_arm.setdefault(ep.arm, []).append(ep)
    good = next(e for e in by_arm["good"] if e.task_id == "es.channel-count-turns")
    assert good.status == "completed" and good.agent == "kibana" and good.model == "good"
    assert good.target == "kibana:elastic-ai-agent" and good.provider == "kibana"
    names = [c.name for c in good.tool_calls]
    assert names == ["platform.core.search", "platform.core.execute_esql"]
    assert [c.turn for c in good.tool_calls] == [0, 1] and "tabular_data" in good.tool_calls[
        1
    ].result
    assert good.tool_calls[0].session == good.sessions[0] == good.rounds[0].conversation_id
    assert len(good.rounds) == 2 and good.rounds[1].round_id.endswith("round-2")  # type: ignore[union-attr]
    assert good.usage.input == 2 * 1000 and good.usage.cache_read == 2 * 200
    assert good.cost_usd is not None and good.cost_usd > 0 and good.cost_source == "price_table"
    assert good.ttft_ms is not None and good.rounds[0].reported_ttft_ms == 850
    assert len(good.answers) == 2 and good.prompts[0] == "I want to look at our sales channels."
    assert good.messages[0].role == "user" and "FINAL ANSWER:" in good.messages[0].content
    assert [m.role for m in good.messages[1:4]] == ["assistant", "tool", "assistant"]
    bad = by_arm["bad"][0]
    assert bad.usage.total == 0 and bad.cost_usd is None and bad.rounds[0].model_usage is None
    assert not bad.usage_known and good.usage_known  # unreported usage is unknown, never 0
    assert good.ttft_source == "measured" and good.rounds[0].ttft_source == "measured"
    assert all(e.status == "harness_error" for e in by_arm["broken"])
    assert "HTTP 500" in (by_arm["broken"][0].harness_error or "")
    assert all(e.audit is None or e.audit.source == "harness" for e in episodes)

    grades = {g.key: g for g in map(Grade.model_validate_json, (out / "grades.jsonl").open())}
    for ep in by_arm["good"]:
        assert grades[ep.key].passed, grades[ep.key].reason
        assert grades[ep.key].scores["tool"] == 1.0
    assert not any(grades[e.key].passed for e in by_arm["bad"])
    assert all(grades[e.key].excluded for e in by_arm["broken"])

    report = (out / "report.md").read_text(encoding="utf-8")
    assert "composite score" in report and "reliability" in report
    assert "latency OK / all" in report
    ranking = [line for line in report.splitlines() if re.match(r"\| \d \| `", line)]
    assert ranking[0].startswith("| 1 | `good` | 100.0% [100.0, 100.0] |")
    assert ranking[1].startswith("| 2 | `bad` | 0.0% ")
    excluded = "| 1 | `broken` | n/a (6 of 6 episodes excluded: harness errors) |"
    assert ranking[2].startswith(excluded)  # every episode excluded, said in words
    costs = next(line for line in report.splitlines() if line.startswith("| `good` | $"))
    assert costs.split(" | ")[3] != "—", "quality per dollar is computed from model_usage"
    stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    overall = {g["arm"]: g for g in stats["groups"] if g["dimension"] == "overall"}
    assert overall["bad"]["efficiency"]["tokens_mean"] is None
    assert overall["bad"]["efficiency"]["tokens_n"] == 0
    assert overall["good"]["efficiency"]["tokens_n"] == 6
    assert overall["good"]["efficiency"]["ttft_source"] == "measured"
    assert "measured by dabench" in report
    assert "good" in json.dumps(stats) and (out / "report.html").exists()
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    arm = manifest["arms"][0]
    assert arm["target"]["kibana_version"] == "9.3.0" and arm["agent"]["connector_id"] == "good"
    assert arm["target"]["retry"]["max_attempts"] == 3
    assert "test-key" not in json.dumps(manifest)


async def test_agent_budget_and_wrong_target(tmp_path: Path, world_dir: Path) -> None:
    task = next(t for t in load_tasks([DATA / "tasks.yaml"]).tasks if t.id == "es.store-count")
    steps = [
        tool_step("platform.core.search", {"query": "stores"}, [], call_id=f"c{i}")
        for i in range(3)
    ]
    with FakeKibana(lambda body: Scripted(message="FINAL ANSWER: 1", steps=steps)) as server:
        raw = {"kind": "kibana", "url": server.url, "api_key": "test-key"}
        target = make_target(raw, TargetContext(world_dir=None, work_dir=tmp_path))
        assert isinstance(target, KibanaTarget)
        await target.start()
        agent = KibanaAgent(
            KibanaAgentConfig(connector_id="c", stream=False, answer_protocol=False)
        )
        transcript = EpisodeTranscript()
        request = EpisodeRequest("r", "a", task, 0, target, budget=2)
        try:
            status = await agent.run(request, transcript)
        finally:
            await target.stop()
    assert status == "budget_exhausted" and len(transcript.tool_calls) == 3
    assert server.converse_bodies()[0]["input"] == task.messages[0]
    assert transcript.tool_calls[0].result == "(no results)"
    check = check_tool_overlap(
        Episode.model_construct(tool_calls=transcript.tool_calls), ["sql_query"]
    )
    assert check.passed and "platform.core.search" in check.reason

    other = EpisodeRequest("r", "a", task, 0, _reference_like(tmp_path), budget=5)
    with pytest.raises(HarnessError, match="needs a target of kind 'kibana'"):
        await agent.run(other, EpisodeTranscript())


def _reference_like(tmp_path: Path) -> Any:
    raw = {"kind": "mcp", "name": "x", "command": ["true"]}
    return make_target(raw, TargetContext(world_dir=None, work_dir=tmp_path))


def test_usage_parsing_is_defensive() -> None:
    assert usage_of(None).total == 0
    assert usage_of({"input_tokens": "many", "output_tokens": True}).total == 0
    usage = usage_of(DEFAULT_USAGE)
    assert (usage.input, usage.output, usage.cache_read) == (1000, 80, 200)


def test_shipped_example_experiment_is_valid() -> None:
    exp = load_experiment(EXAMPLE)
    connectors = [arm.agent["connector_id"] for arm in exp.arms]
    assert len(set(connectors)) == len(connectors) >= 3
    targets = {json.dumps(arm.target, sort_keys=True) for arm in exp.arms}
    assert len(targets) == 1, "arms differ only by connector"


async def test_a_round_without_usage_makes_the_cost_unknown(tmp_path: Path) -> None:
    task = next(t for t in load_tasks([DATA / "tasks.yaml"]).tasks if len(t.messages) == 2)

    def respond(body: dict[str, Any]) -> Scripted:
        later = "conversation_id" in body
        return Scripted(message="FINAL ANSWER: 3", model_usage=None if later else DEFAULT_USAGE)

    with FakeKibana(respond) as server:
        raw = {"kind": "kibana", "url": server.url, "api_key": "test-key"}
        target = make_target(raw, TargetContext(world_dir=None, work_dir=tmp_path))
        await target.start()
        config = KibanaAgentConfig(connector_id="c", price_model="openai:gpt-4.1")
        transcript = EpisodeTranscript()
        try:
            status = await KibanaAgent(config).run(
                EpisodeRequest("r", "a", task, 0, target, budget=5), transcript
            )
        finally:
            await target.stop()
    assert status == "completed" and transcript.usage.output == 80
    assert transcript.cost_usd is None and transcript.cost_source == "none"
    assert [r.model_usage is None for r in transcript.rounds] == [False, True]
    assert transcript.sessions == ["conv-1"] and transcript.ttft_ms is not None


def test_unset_key_is_bad_input_and_unreachable_kibana_fails_the_run(
    tmp_path: Path, world_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dabench.targets.process import free_port

    exp = experiment(tmp_path, world_dir, f"http://127.0.0.1:{free_port()}")
    monkeypatch.delenv("FAKE_KIBANA_KEY", raising=False)
    runner = CliRunner()
    unset = runner.invoke(app, ["run", str(exp), "--out", str(tmp_path / "a"), "--no-progress"])
    assert isinstance(unset.exception, UserInputError)  # the CLI prints `error: ...`, exit 2
    assert "environment variable FAKE_KIBANA_KEY is not set" in str(unset.exception)
    monkeypatch.setenv("FAKE_KIBANA_KEY", "k")
    down = runner.invoke(app, ["run", str(exp), "--out", str(tmp_path / "b"), "--no-progress"])
    assert down.exit_code == 3
    assert "did not start: kibana: GET /api/status failed after 3 attempts" in down.output
