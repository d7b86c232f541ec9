"""Provider faults, malformed tool calls, episode timeouts and audit gaps."""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import yaml
from rich.console import Console
from tests.quiet_http import QuietThreadingHTTPServer
from typer.testing import CliRunner

from dabench.agents.base import EpisodeRequest, EpisodeTranscript
from dabench.agents.llm import LlmAgent, LlmAgentConfig
from dabench.cli import app
from dabench.journal.records import TokenUsage
from dabench.journal.store import Journal
from dabench.providers.base import ChatMessage, ModelResponse, ToolCallRequest, ToolSpec
from dabench.runner.experiment import Experiment, load_experiment
from dabench.runner.run import ExperimentRun
from dabench.targets.base import Target
from dabench.tasks.loader import load_tasks

from .conftest import DATA
from .test_mcp_target import mcp_experiment


def with_agent(path: Path, **agent: Any) -> Experiment:
    data = yaml.safe_load(path.read_text())
    data["arms"][0]["agent"].update(agent)
    path.write_text(yaml.safe_dump(data))
    return load_experiment(path)


async def run(exp: Experiment, run_dir: Path) -> Any:
    return await ExperimentRun(
        exp, run_dir, experiment_dir=run_dir.parent, console=Console(quiet=True), progress=False
    ).execute()


def test_provider_outage_is_a_harness_error(
    tmp_path: Path, mini_world: Path, everything_server: list[str]
) -> None:
    exp = with_agent(
        mcp_experiment(tmp_path, mini_world, everything_server),
        model="fake:fail_first=100,sql_tool=echo",
        retries={"max_attempts": 3, "base_delay": 0.0},
    )
    del exp  # validated above; run through the CLI for its exit code
    result = CliRunner().invoke(
        app,
        ["run", str(tmp_path / "exp.yaml"), "--out", str(tmp_path / "run"), "--no-progress"],
    )
    assert result.exit_code == 3, result.output
    assert "3 episode(s) ended in a harness error" in result.output
    episodes = Journal(tmp_path / "run").load()
    assert len(episodes) == 3
    for ep in episodes:
        assert ep.status == "harness_error"
        assert ep.harness_error is not None and "retries exhausted" in ep.harness_error
        assert re.search(r"injected failure \d+/100", ep.harness_error)

    # A resume plays the harness errors again (they are not measurements); the outage goes on,
    # so each key ends in a second harness error that replaces the first.
    again = CliRunner().invoke(app, ["run", "--resume", str(tmp_path / "run"), "--no-progress"])
    assert again.exit_code == 3, again.output
    assert "3 episode(s) that ended in a harness error will be retried" in again.output
    journal = Journal(tmp_path / "run")
    latest = journal.load()
    assert len((tmp_path / "run" / "episodes.jsonl").read_text().splitlines()) == 6
    assert sorted(e.key for e in latest) == sorted(e.key for e in episodes)
    assert len(journal.retried) == 3 and all(e.status == "harness_error" for e in latest)


async def test_retryable_faults_are_retried(
    tmp_path: Path, mini_world: Path, everything_server: list[str]
) -> None:
    exp = with_agent(
        mcp_experiment(tmp_path, mini_world, everything_server),
        model="fake:fail_first=2,sql_tool=echo",
        retries={"max_attempts": 3, "base_delay": 0.0},
    )
    exp = exp.model_copy(update={"concurrency": 1})
    summary = await run(exp, tmp_path / "run")
    assert summary.statuses == {"completed": 3}
    # the two injected failures were retried and are on the record, not lost
    retries = [e.transient_retries for e in Journal(tmp_path / "run").load()]
    assert sorted(retries) == [0, 0, 2]


async def test_episode_time_limit(
    tmp_path: Path, mini_world: Path, everything_server: list[str]
) -> None:
    exp = with_agent(
        mcp_experiment(tmp_path, mini_world, everything_server),
        model="fake:latency=5s,sql_tool=echo",
    )
    exp = exp.model_copy(update={"episode_timeout_s": 0.3})
    summary = await run(exp, tmp_path / "run")
    assert summary.statuses == {"timeout": 3}


class ScriptedModel:
    """A model stand-in that makes a malformed call, an unknown-tool call, then answers."""

    name = "scripted"
    model = "malformed"

    def __init__(self) -> None:
        self.systems: list[str] = []

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        system: str,
        tools: list[ToolSpec],
        max_tokens: int,
        temperature: float,
    ) -> ModelResponse:
        self.systems.append(system)
        step = sum(1 for m in messages if m.role == "assistant")
        usage = TokenUsage(input=10, output=5)
        if step == 0:
            bad = ToolCallRequest(
                id="c1", name="echo", raw_arguments="{msg", parse_error="bad json"
            )
            return ModelResponse(tool_calls=[bad], usage=usage)
        if step == 1:
            ghost = ToolCallRequest(id="c2", name="drop_tables", arguments={})
            return ModelResponse(tool_calls=[ghost], usage=usage)
        assert "UNKNOWN_TOOL" in messages[-1].tool_results[0].content
        return ModelResponse(text="FINAL ANSWER: 40", usage=usage)


async def test_malformed_and_unknown_tool_calls_go_back_to_the_model(
    everything_target: Target,
) -> None:
    target = everything_target
    agent = LlmAgent(LlmAgentConfig(model="fake:scripted"), provider=ScriptedModel())
    task = load_tasks([DATA / "tasks_basic.yaml"]).tasks[0]
    transcript = EpisodeTranscript()
    status = await agent.run(EpisodeRequest("r", "a", task, 0, target, 30), transcript)
    assert status == "completed" and transcript.answers == ["FINAL ANSWER: 40"]
    codes = [(c.name, c.error_code, c.session) for c in transcript.tool_calls]
    assert codes == [("echo", "INVALID_ARGUMENTS", ""), ("drop_tables", "UNKNOWN_TOOL", "")]
    assert transcript.sent_calls() == 0
    assert transcript.usage.input == 30


async def test_the_model_is_told_its_tool_call_budget(everything_target: Target) -> None:
    """An agent cannot plan within a budget it does not know: every model call's system prompt
    states the episode's budget, and the journal records that prompt."""
    model = ScriptedModel()
    agent = LlmAgent(LlmAgentConfig(model="fake:scripted"), provider=model)
    task = load_tasks([DATA / "tasks_basic.yaml"]).tasks[0]
    transcript = EpisodeTranscript()
    await agent.run(
        EpisodeRequest("r", "a", task, 0, target=everything_target, budget=7), transcript
    )
    assert len(model.systems) == 3
    assert all(s.startswith(agent.system) and "at most 7 tool calls" in s for s in model.systems)
    assert transcript.messages[0].role == "system"
    assert transcript.messages[0].content == model.systems[0]


class AuditHandler(BaseHTTPRequestHandler):
    """An audit API that always answers one tool-call row per session."""

    def do_GET(self) -> None:
        url = urlparse(self.path)
        ok = (
            url.path == "/api/v1/admin/audit/events"
            and self.headers.get("Authorization") == "Bearer adm-key-123"
        )
        session = parse_qs(url.query).get("session_id", [""])[0]
        offset = int(parse_qs(url.query).get("offset", ["0"])[0])
        rows = [{"session_id": session, "event_kind": "tool_call", "tool_name": "echo"}]
        body = json.dumps({"events": rows[offset:], "total": 1}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def audit_server() -> Iterator[str]:
    server = QuietThreadingHTTPServer(("127.0.0.1", 0), AuditHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


def test_audit_gap_fails_the_run_unless_allowed(
    tmp_path: Path,
    mini_world: Path,
    everything_server: list[str],
    audit_server: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_AUDIT_KEY", "adm-key-123")
    path = mcp_experiment(tmp_path, mini_world, everything_server)
    data = yaml.safe_load(path.read_text())
    data["tasks"]["smoke"] = True
    data["arms"][0]["target"]["audit"] = {
        "base_url": audit_server,
        "admin_key_env": "TEST_AUDIT_KEY",
    }
    path.write_text(yaml.safe_dump(data))
    cli = CliRunner()
    result = cli.invoke(
        app, ["run", str(path), "--out", str(tmp_path / "r1"), "--no-progress", "--no-grade"]
    )
    assert result.exit_code == 1, result.output
    assert "audit gap" in result.output and "failing the run" in result.output
    episodes = Journal(tmp_path / "r1").load()
    assert len(episodes) == 2
    for ep in episodes:
        assert ep.audit is not None and not ep.audit.ok
        assert ep.audit.source == "platform"
        assert (ep.audit.expected_calls, ep.audit.audit_rows) == (2, 1)
    allowed = cli.invoke(
        app,
        [
            "run",
            str(path),
            "--out",
            str(tmp_path / "r2"),
            "--no-progress",
            "--no-grade",
            "--allow-audit-gaps",
        ],
    )
    assert allowed.exit_code == 0, allowed.output


async def test_provider_concurrency_bounds_episodes(
    tmp_path: Path, mini_world: Path, everything_server: list[str]
) -> None:
    exp = with_agent(
        mcp_experiment(tmp_path, mini_world, everything_server, k=2),
        model="fake:latency=50ms,calls=1,sql_tool=echo",
    )
    exp = exp.model_copy(update={"concurrency": 4, "provider_concurrency": {"fake": 1}})
    summary = await run(exp, tmp_path / "run")
    assert summary.statuses == {"completed": 6}
    spans = sorted((e.started_at, e.finished_at) for e in Journal(tmp_path / "run").load())
    assert all(prev[1] <= nxt[0] for prev, nxt in itertools.pairwise(spans))
