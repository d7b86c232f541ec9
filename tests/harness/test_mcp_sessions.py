"""The generic ``mcp`` target against the reference platform served by ``dabench platform
serve`` (streamable HTTP and stdio): one MCP session per episode, the handle minted through
``platform_info`` (``session_tool``) and injected as ``session_id``, the oracle passing the
smoke tasks, and a server killed mid-run turning into harness errors with their cause."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.platform.platform_helpers import (
    ADMIN_KEY,
    KEYS,
    RunningPlatform,
    start_platform,
    stop_platform,
)
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import HarnessError
from dabench.journal.store import Journal, load_grades
from dabench.targets.base import TargetContext
from dabench.targets.mcp import McpSession, McpTarget
from dabench.targets.registry import make_target

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def auth_yaml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test identities and admin key."""
    path = tmp_path_factory.mktemp("auth") / "auth.yaml"
    identities = [{"key": key, "user": user} for user, key in KEYS.items()]
    path.write_text(yaml.safe_dump({"identities": identities, "admin_keys": [ADMIN_KEY]}))
    return path


@pytest.fixture(scope="module")
def served_a2(
    real_world: Path, auth_yaml: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPlatform]:
    """``dabench platform serve --profile a2`` over streamable HTTP."""
    platform = start_platform(real_world, "a2", auth_yaml, tmp_path_factory.mktemp("a2"))
    try:
        yield platform
    finally:
        stop_platform(platform)


def http_target(platform: RunningPlatform, **extra: Any) -> dict[str, Any]:
    """A generic ``mcp`` target config for a served reference platform (with its audit API)."""
    return {
        "kind": "mcp",
        "name": "ref-a2",
        "url": platform.base_url + "/mcp",
        "headers": {"Authorization": f"Bearer {KEYS['teacher']}"},
        "session_argument": "session_id",
        "session_tool": {"name": "platform_info"},
        "audit": {"base_url": platform.base_url, "admin_key": ADMIN_KEY},
        **extra,
    }


def stdio_target(world: Path, state: Path) -> dict[str, Any]:
    """A generic ``mcp`` target that spawns ``dabench platform serve --transport stdio``."""
    return {
        "kind": "mcp",
        "name": "ref-a2-stdio",
        "command": [
            sys.executable,
            "-m",
            "dabench.cli",
            "platform",
            "serve",
            "--world",
            str(world),
            "--profile",
            "a2",
            "--transport",
            "stdio",
            "--state-dir",
            str(state),
        ],
        "session_argument": "session_id",
        "session_tool": {"name": "platform_info"},
    }


def smoke_experiment(tmp_path: Path, world: Path, target: dict[str, Any], **extra: Any) -> Path:
    """The S1 and S3 smoke tasks, oracle agent, on ``target``."""
    exp = {
        "name": "generic-mcp",
        "world": {"dir": str(world)},
        "tasks": {"smoke": True},
        "k": 1,
        "concurrency": 2,
        "episode_timeout_s": 120,
        "arms": [{"name": "generic", "target": target, "agent": {"kind": "oracle"}}],
        **extra,
    }
    exp["arms"][0]["suites"] = ["s1", "s3"]  # type: ignore[index]
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp))
    return path


def run_cli(exp: Path, out: Path, codes: tuple[int, ...] = (0,)) -> str:
    """``dabench run EXP --out OUT`` in-process; returns its output."""
    result = CliRunner().invoke(app, ["run", str(exp), "--out", str(out), "--no-progress"])
    assert result.exit_code in codes, result.output
    return result.output


def test_oracle_passes_smoke_over_http_with_platform_sessions(
    tmp_path: Path, real_world: Path, served_a2: RunningPlatform
) -> None:
    out = tmp_path / "run"
    run_cli(smoke_experiment(tmp_path, real_world, http_target(served_a2)), out)
    episodes = Journal(out).load()
    assert len(episodes) == 10
    handles = [ep.sessions[0] for ep in episodes]
    assert len(set(handles)) == len(handles) and all(h.startswith("dps_") for h in handles)
    for ep in episodes:
        assert ep.status == "completed", (ep.key, ep.harness_error)
        assert ep.target == "mcp:ref-a2" and len(ep.sessions) == 1
        assert not any(c.is_error for c in ep.tool_calls), [c.result for c in ep.tool_calls]
        assert ep.tool_calls[0].name == "search"  # a2's search-first gate was satisfied
        assert ep.audit is not None and ep.audit.source == "platform" and ep.audit.ok
        assert ep.audit.audit_rows == len(ep.tool_calls)
    assert all(g.passed for g in load_grades(out)), [g.reason for g in load_grades(out)]
    # the platform's audit log: each handle opened once, its calls all under it
    opened = [r["session_id"] for r in served_a2.audit(tool_name="platform_info")]
    assert set(handles) <= set(opened) and len(opened) == len(set(opened))
    for ep in episodes:
        rows = served_a2.audit(session_id=ep.sessions[0], event_kind="tool_call")
        assert [r["tool_name"] for r in rows] == [c.name for c in ep.tool_calls]


async def test_concurrent_episodes_get_distinct_mcp_sessions(
    tmp_path: Path, served_a2: RunningPlatform
) -> None:
    target = make_target(
        # no session argument: the episode header alone carries the minted handle
        http_target(
            served_a2, session_argument=None, episode_headers={"X-DPS-Session": "{session}"}
        ),
        TargetContext(None, tmp_path),
    )
    assert isinstance(target, McpTarget)
    await target.start()
    try:
        one, two = await asyncio.gather(target.open_session(), target.open_session())
        assert isinstance(one, McpSession) and isinstance(two, McpSession)
        assert one.handle != two.handle
        assert one.conn is not two.conn
        # the platform speaks the stateless revision: no Mcp-Session-Id, each session its own
        # handshake (test_mcp_target.py checks distinct Mcp-Session-Ids on a stateful server)
        assert one.protocol_version == two.protocol_version == "2026-07-28"
        assert one.mcp_session_id is None and two.mcp_session_id is None
        shown = await one.tools()
        assert "platform_info" not in {t.name for t in shown} and "search" in {
            t.name for t in shown
        }
        results = await asyncio.gather(
            one.call("search", {"query": "orders"}), two.call("search", {"query": "customers"})
        )
        assert not any(r.is_error for r in results), [r.text for r in results]
        for session in (one, two):
            rows = served_a2.audit(session_id=session.handle, event_kind="tool_call")
            assert len(rows) == 1 and rows[0]["user_id"] == "teacher"
        await target.end_episode([one.handle])
        with pytest.raises(HarnessError, match="closed"):
            await one.call("search", {"query": "orders"})
        assert not (await two.call("search", {"query": "again"})).is_error
    finally:
        await target.stop()


STDIO_TASKS = [
    "s1.orders-source",
    "s1.revenue-policy-page",
    "s3.cents-units.avg-list-price",
    "s3.test-accounts.customers",
]
"""Two smoke tasks of each suite: every episode starts its own server process (a Python
start-up and a world load each), and four episodes prove one process per episode as well as
ten; the HTTP test above plays every smoke task."""


def test_oracle_passes_smoke_over_stdio_one_process_per_episode(
    tmp_path: Path, real_world: Path
) -> None:
    out = tmp_path / "run"
    target = stdio_target(real_world, tmp_path / "state")
    tasks = {"smoke": True, "tasks": STDIO_TASKS}
    run_cli(smoke_experiment(tmp_path, real_world, target, tasks=tasks), out)
    episodes = Journal(out).load()
    assert sorted(ep.task_id for ep in episodes) == sorted(STDIO_TASKS)
    assert all(ep.status == "completed" for ep in episodes), [e.harness_error for e in episodes]
    assert len({ep.sessions[0] for ep in episodes}) == len(STDIO_TASKS)
    assert all(ep.audit is not None and ep.audit.source == "harness" for ep in episodes)
    assert all(g.passed for g in load_grades(out))
    log = (out / "targets" / "generic" / "server.log").read_text()
    # the start-up listing + one per episode
    assert log.count("no --auth: dev keys") == 1 + len(STDIO_TASKS)


def test_a_server_killed_mid_run_is_harness_errors_with_the_cause(
    tmp_path: Path,
    real_world: Path,
    auth_yaml: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    platform = start_platform(real_world, "a2", auth_yaml, tmp_path / "state")
    opened = McpTarget.open_session
    count = 0

    async def kill_before_the_fourth(self: McpTarget, identity: str = "default") -> McpSession:
        # Killed when the fourth episode opens its session (not when the third is journaled,
        # which under load can lag behind the episodes that follow it).
        nonlocal count
        count += 1
        if count == 4 and platform.process.poll() is None:
            platform.process.send_signal(signal.SIGKILL)
            platform.process.wait()
        return await opened(self, identity)

    monkeypatch.setattr(McpTarget, "open_session", kill_before_the_fourth)
    out = tmp_path / "run"
    exp = smoke_experiment(tmp_path, real_world, http_target(platform), concurrency=1)
    try:
        # 3: harness errors; 1: the kill also cut an audit read-back short (an audit gap)
        output = run_cli(exp, out, codes=(1, 3))
    finally:
        stop_platform(platform)
    episodes = Journal(out).load()
    errors = [ep for ep in episodes if ep.status == "harness_error"]
    assert len(episodes) == 10 and len(errors) == 7, [e.status for e in episodes]
    assert all(ep.status == "completed" for ep in episodes if ep not in errors)
    n = len(errors)
    for ep in errors:
        assert ep.harness_error is not None
        # the session could not open (connect, or the platform_info that mints the handle)
        assert f"{platform.base_url}/mcp" in ep.harness_error
        assert re.search(r"(ConnectError|ReadError|RemoteProtocolError)", ep.harness_error)
    causes = [ep.harness_error or "" for ep in errors]
    assert any("ConnectError: All connection attempts failed" in c for c in causes), causes
    assert "harness error" in output
    assert f"({n} of 10 excluded: harness errors)" in output  # the closing summary
    report = (out / "report.md").read_text()
    assert f"{n} of 10 episodes excluded: harness errors" in report
    assert f"100.0% (of {10 - n} graded)" in report  # completion is never a bare 100 %
    html = (out / "report.html").read_text()
    assert f"{n} of 10 episodes excluded (harness errors)" in html
    assert f"of {10 - n} graded" in html
