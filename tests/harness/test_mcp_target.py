"""The generic MCP target against a third-party server from npm, driven by the LLM agent
(fake provider) through the runner; efficiency comes from the harness trace."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from dabench.agents.base import EpisodeRequest, EpisodeTranscript
from dabench.agents.llm import LlmAgent, LlmAgentConfig
from dabench.errors import HarnessError
from dabench.journal.store import Journal, read_manifest
from dabench.runner.experiment import load_experiment
from dabench.runner.run import ExperimentRun
from dabench.targets.base import Target, TargetContext
from dabench.targets.mcp import McpSession
from dabench.targets.mcp_lean import LeanMcpConnection
from dabench.targets.process import ServerProcess, free_port
from dabench.targets.registry import make_target
from dabench.tasks.loader import load_tasks

from .conftest import DATA


def mcp_experiment(
    tmp_path: Path, world: Path, server: list[str], *, k: int = 1, latency: str = "0"
) -> Path:
    exp = {
        "name": "mcp-everything",
        "world": {"dir": str(world)},
        "tasks": {"builtin": False, "files": [str(DATA / "tasks_basic.yaml")]},
        "k": k,
        "concurrency": 2,
        "episode_timeout_s": 60,
        "arms": [
            {
                "name": "everything",
                "target": {"kind": "mcp", "name": "everything", "command": server},
                "agent": {
                    "kind": "llm",
                    "model": f"fake:latency={latency},calls=2,sql_tool=echo",
                    "budget": 5,
                },
            }
        ],
    }
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp))
    return path


async def test_tools_errors_and_session_on_everything(
    tmp_path: Path, everything_server: list[str]
) -> None:
    target = make_target(
        {"kind": "mcp", "name": "everything", "command": everything_server},
        TargetContext(world_dir=None, work_dir=tmp_path),
    )
    await target.start()
    try:
        assert target.efficiency_source == "harness"
        session = await target.open_session()
        names = {t.name for t in await session.tools()}
        assert {"echo", "get-sum"} <= names
        ok = await session.call("echo", {"message": "hi"})
        assert ok.text == "Echo: hi" and not ok.is_error and ok.latency_ms > 0
        bad = await session.call("get-sum", {"a": "x"})
        assert bad.is_error
        audit = await target.read_audit([session.handle], 2)
        assert audit.source == "harness" and audit.ok
    finally:
        await target.stop()


async def test_llm_agent_budget_exhaustion(everything_target: Target) -> None:
    target = everything_target
    agent = LlmAgent(LlmAgentConfig(model="fake:calls=6,sql_tool=echo", budget=3))
    task = load_tasks([DATA / "tasks_basic.yaml"]).tasks[0]
    transcript = EpisodeTranscript()
    req = EpisodeRequest("r", "arm", task, 0, target, agent.budget_for(task))
    status = await agent.run(req, transcript)
    assert status == "budget_exhausted"
    assert len(transcript.tool_calls) == 3
    assert transcript.answers == []


async def test_runner_over_mcp_target(
    tmp_path: Path, mini_world: Path, everything_server: list[str]
) -> None:
    exp = load_experiment(mcp_experiment(tmp_path, mini_world, everything_server))
    run_dir = tmp_path / "run"
    run = ExperimentRun(
        exp, run_dir, experiment_dir=tmp_path, console=Console(quiet=True), progress=False
    )
    summary = await run.execute()
    assert summary.finished == 3 and summary.statuses["completed"] == 3
    assert not summary.audit_gaps
    episodes = Journal(run_dir).load()
    assert {e.key for e in episodes} == {
        "everything/t.count-orders/0",
        "everything/t.revenue/0",
        "everything/t.where-orders/0",
    }
    for ep in episodes:
        assert ep.target == "mcp:everything" and ep.provider == "fake"
        assert [c.name for c in ep.tool_calls] == ["echo", "echo"]
        assert all(c.session == ep.sessions[0] for c in ep.tool_calls)
        assert ep.audit is not None and ep.audit.source == "harness" and ep.audit.ok
        assert ep.final_answer is not None and ep.final_answer.startswith("Echo:")
    manifest = read_manifest(run_dir)
    assert manifest.arms[0]["efficiency_source"] == "harness"
    assert manifest.finished_at is not None and not manifest.no_model
    assert (run_dir / "tasks.lock.json").exists() and (run_dir / "tasks.yaml").exists()
    # A second run into the same directory is refused; a resume has nothing to do.
    with pytest.raises(Exception, match="already holds episodes"):
        await ExperimentRun(exp, run_dir, experiment_dir=tmp_path, progress=False).execute()
    again = ExperimentRun(
        exp, run_dir, experiment_dir=tmp_path, resume=True, console=Console(quiet=True)
    )
    summary = await again.execute()
    assert summary.planned == 0 and summary.already_done == 3


async def start_http_everything(tmp_path: Path, command: list[str]) -> tuple[ServerProcess, int]:
    """server-everything in streamable-HTTP mode on a free port, once it accepts connections."""
    port = free_port()
    server = ServerProcess(
        [command[0], "streamableHttp"], tmp_path / "server.log", env={"PORT": str(port)}
    )
    server.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server, port
        except OSError:
            await asyncio.sleep(0.1)
    server.kill_now()
    raise AssertionError(f"server-everything did not listen: {server.log_tail()}")


async def test_streamable_http_target(tmp_path: Path, everything_server: list[str]) -> None:
    server, port = await start_http_everything(tmp_path, everything_server)
    try:
        target = make_target(
            {"kind": "mcp", "name": "everything-http", "url": f"http://127.0.0.1:{port}/mcp"},
            TargetContext(None, tmp_path),
        )
        await target.start()
        try:
            assert target.describe()["endpoint"] == f"http://127.0.0.1:{port}/mcp"
            session = await target.open_session()
            assert "echo" in {t.name for t in await session.tools()}
            out = await session.call("echo", {"message": "over http"})
            assert out.text == "Echo: over http" and not out.is_error
            # one MCP session per episode session, concurrently opened, on one pool
            assert isinstance(session, McpSession)
            other = await target.open_session()
            assert isinstance(other, McpSession)
            assert session.mcp_session_id and other.mcp_session_id
            assert session.mcp_session_id != other.mcp_session_id
            await target.end_episode([session.handle])
            assert not (await other.call("echo", {"message": "still"})).is_error
        finally:
            await target.stop()
    finally:
        server.kill_now()


async def test_cancelled_call_leaves_the_shared_connection_usable(
    everything_target: Target,
) -> None:
    target = everything_target
    session = await target.open_session()
    slow = {"duration": 5, "steps": 5}
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.5):
            await session.call("trigger-long-running-operation", slow)
    out = await asyncio.wait_for(session.call("echo", {"message": "still here"}), 5)
    assert out.text == "Echo: still here"


async def test_a_target_that_died_is_a_harness_error(
    tmp_path: Path, everything_server: list[str]
) -> None:
    server, port = await start_http_everything(tmp_path, everything_server)
    target = make_target(
        {"kind": "mcp", "url": f"http://127.0.0.1:{port}/mcp", "call_timeout_s": 5},
        TargetContext(None, tmp_path),
    )
    try:
        await target.start()
        session = await target.open_session()
        await session.call("echo", {"message": "alive"})
        server.kill_now()
        with pytest.raises(HarnessError, match="tool call echo failed"):
            await asyncio.wait_for(session.call("echo", {"message": "dead"}), 20)
    finally:
        server.kill_now()
        await target.stop()


async def test_lean_client_refuses_a_server_without_the_stateless_revision(
    tmp_path: Path, everything_server: list[str]
) -> None:
    server, port = await start_http_everything(tmp_path, everything_server)
    conn = LeanMcpConnection(f"http://127.0.0.1:{port}/mcp", {})
    try:
        with pytest.raises(HarnessError, match="use the official client"):
            await conn.open()
    finally:
        await conn.close()
        server.kill_now()


async def test_session_argument_is_hidden_and_injected(
    tmp_path: Path, everything_server: list[str]
) -> None:
    target = make_target(
        {"kind": "mcp", "command": everything_server, "session_argument": "message"},
        TargetContext(None, tmp_path),
    )
    await target.start()
    try:
        session = await target.open_session()
        echo = next(t for t in await session.tools() if t.name == "echo")
        assert "message" not in echo.input_schema.get("properties", {})
        assert "message" not in echo.input_schema.get("required", [])
        out = await session.call("echo", {"message": "the model's own value"})
        assert out.text == f"Echo: {session.handle}" and session.handle.startswith("hs_")
        other = await target.open_session()
        assert other.handle != session.handle
    finally:
        await target.stop()


def test_session_options_that_need_the_other_transport_are_refused(tmp_path: Path) -> None:
    ctx = TargetContext(None, tmp_path)
    with pytest.raises(Exception, match="'episode_headers' need a 'url'"):
        make_target({"kind": "mcp", "command": ["x"], "episode_headers": {"X": "{session}"}}, ctx)
    with pytest.raises(Exception, match="'share_process' is for a stdio 'command'"):
        make_target({"kind": "mcp", "url": "http://127.0.0.1:1/mcp", "share_process": True}, ctx)


async def test_stdio_shared_process_and_episode_arguments(
    tmp_path: Path, everything_server: list[str]
) -> None:
    target = make_target(
        {
            "kind": "mcp",
            "command": everything_server,
            "share_process": True,
            "episode_arguments": {"message": "episode {session}"},
        },
        TargetContext(None, tmp_path),
    )
    await target.start()
    try:
        one, two = await target.open_session(), await target.open_session()
        assert isinstance(one, McpSession) and isinstance(two, McpSession)
        assert one.conn is two.conn and one.handle != two.handle
        echo = next(t for t in await one.tools() if t.name == "echo")
        assert "message" not in echo.input_schema.get("properties", {})
        out = await one.call("echo", {})
        assert out.text == f"Echo: episode {one.handle}"
        await target.end_episode([one.handle])  # the shared process stays up
        assert (await two.call("echo", {})).text == f"Echo: episode {two.handle}"
    finally:
        await target.stop()


async def test_a_session_tool_without_a_handle_is_a_harness_error(
    tmp_path: Path, everything_server: list[str]
) -> None:
    target = make_target(
        {
            "kind": "mcp",
            "command": everything_server,
            "session_tool": {"name": "echo", "arguments": {"message": "no json"}},
        },
        TargetContext(None, tmp_path),
    )
    await target.start()
    try:
        with pytest.raises(HarnessError, match="session tool echo returned no 'session_id'"):
            await target.open_session()
        assert "echo" not in {t.name for t in target.known_tools() or []}
    finally:
        await target.stop()
