"""One identity key per episode (issue #24 items 3 and 4), against a real reference platform.

- A command agent that opens a second MCP session with its episode key and calls there is
  counted: every call lands in its journal, its budget holds, the audit check agrees.
- Another episode's key or session is refused, and its calls never reach this episode.
- No key in the platform's argv or environment, no key file on disk; ``play.json`` holds no
  key, and the open episode's key is revoked when the episode is recorded.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from tests.harness.agent_runs import write_agent_experiment
from typer.testing import CliRunner

from dabench.agents.command import CommandAgentConfig
from dabench.cli import app
from dabench.errors import HarnessError
from dabench.journal.store import Journal
from dabench.play.state import KEYS_FILE, read_keys, read_state
from dabench.targets.base import TargetContext
from dabench.targets.reference import ReferenceTarget, ReferenceTargetConfig
from dabench.targets.reference_episode import ReferenceEpisode

DATA = Path(__file__).parent / "data"

TWO_SESSIONS = """
import asyncio, json, os, sys

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

SQL = "SELECT count(*) AS n FROM sales.stores"


async def calls(headers, n, session_id=""):
    http = httpx2.AsyncClient(headers=headers)
    async with Client(streamable_http_client(os.environ["DABENCH_MCP_URL"], http_client=http),
                      cache=None) as client:
        if session_id is None:  # open a session of our own
            info = await client.call_tool("platform_info", {})
            session_id = json.loads(info.content[0].text)["session_id"]
        text = ""
        for _ in range(n):
            result = await client.call_tool("sql_query", {"session_id": session_id, "sql": SQL})
            text = result.content[0].text
        return text


async def main() -> None:
    headers = json.loads(os.environ["DABENCH_MCP_HEADERS"])
    text = await calls(headers, 2)  # the harness's session (its handle in the header)
    own = {"Authorization": headers["Authorization"]}
    await calls(own, 10, None)  # a second session, opened with the same key
    print("FINAL ANSWER:", json.loads(text)["rows"][0][0])


asyncio.run(main())
"""

SIBLING = """
import asyncio, json, os, sys
from pathlib import Path

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

SQL = "SELECT 1 AS one"
shared = Path(os.environ["SHARED_DIR"])


async def call(headers, session_id):
    http = httpx2.AsyncClient(headers=headers)
    try:
        async with Client(streamable_http_client(os.environ["DABENCH_MCP_URL"], http_client=http),
                          cache=None) as client:
            result = await client.call_tool("sql_query", {"session_id": session_id, "sql": SQL})
            return json.loads(result.content[0].text).get("error", {}).get("code", "ok")
    except Exception as exc:
        return "refused: " + type(exc).__name__


async def main() -> None:
    headers = json.loads(os.environ["DABENCH_MCP_HEADERS"])
    mine = os.environ["DABENCH_SESSION_ID"]
    seen = sorted(shared.glob("*.json"))
    outcomes = {"own": await call(headers, mine)}
    for i, path in enumerate(seen):
        other = json.loads(path.read_text())
        # the sibling's session with my key, and the sibling's (revoked) key itself
        outcomes[f"session{i}"] = await call({"Authorization": headers["Authorization"]},
                                             other["session"])
        outcomes[f"key{i}"] = await call(other["headers"], other["session"])
    (shared / f"{mine}.json").write_text(json.dumps({"session": mine, "headers": headers}))
    print(json.dumps(outcomes))
    print("FINAL ANSWER: 1")


asyncio.run(main())
"""


def _run(tmp_path: Path, world: Path, agent: dict[str, object], tasks: list[str]) -> Path:
    exp = write_agent_experiment(tmp_path, world, agent, tasks, name="episode-keys", concurrency=1)
    run_dir = tmp_path / "run"
    # These agents use the official MCP client from the harness's environment: unsealed (the
    # sealed path is tests/harness/test_isolation.py, whose hostile agent tries the same routes).
    args = ["run", str(exp), "--out", str(run_dir), "--no-progress", "--unsealed"]
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return run_dir


def _agent(tmp_path: Path, source: str, **settings: object) -> dict[str, object]:
    script = tmp_path / "agent.py"
    script.write_text(source, encoding="utf-8")
    return {"kind": "command", "argv": [sys.executable, str(script)], **settings}


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory outside the run and experiment (an agent may be pointed at it)."""
    path = Path(tempfile.mkdtemp(prefix="siblings-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_a_second_session_cannot_hide_calls(real_world: Path, tmp_path: Path) -> None:
    run_dir = _run(tmp_path, real_world, _agent(tmp_path, TWO_SESSIONS, budget=3), ["w.stores"])
    (ep,) = Journal(run_dir).load()
    # 12 sql_query calls in two sessions and the platform_info that opened the second one
    assert ep.status == "budget_exhausted", ep.harness_error
    assert len(ep.tool_calls) == 13
    names = [c.name for c in ep.tool_calls]
    assert names.count("sql_query") == 12 and names.count("platform_info") == 1
    own = [c for c in ep.tool_calls if c.session == ep.sessions[0]]
    assert len(own) == 2 and len({c.session for c in ep.tool_calls}) == 2
    assert ep.audit is not None and ep.audit.ok, ep.audit.detail
    assert ep.audit.audit_rows == 13 and "episode epi_" in ep.audit.detail


@pytest.mark.slow
def test_a_sibling_episodes_session_and_key_are_refused(
    real_world: Path, tmp_path: Path, shared_dir: Path
) -> None:
    agent = _agent(tmp_path, SIBLING, env={"SHARED_DIR": str(shared_dir)})
    run_dir = _run(tmp_path, real_world, agent, ["w.stores", "w.channels"])
    first, second = sorted(Journal(run_dir).load(), key=lambda e: e.started_at)
    outcomes = json.loads((second.final_answer or "").splitlines()[0])
    assert outcomes["own"] == "ok"
    assert outcomes["session0"] == "SESSION_OF_ANOTHER_EPISODE"
    assert outcomes["key0"].startswith("refused")  # the first episode's key was revoked
    # Nothing landed in the first episode; the refused call is the second episode's.
    assert [c.session for c in first.tool_calls] == first.sessions
    assert first.audit is not None and first.audit.ok and first.audit.audit_rows == 1
    codes = [c.error_code for c in second.tool_calls]
    assert codes == [None, "SESSION_OF_ANOTHER_EPISODE"]
    assert second.tool_calls[1].session == first.sessions[0]
    assert second.audit is not None and second.audit.ok and second.audit.audit_rows == 2


def _mcp_post(base_url: str, key: str, session: str) -> httpx.Response:
    """One raw stateless MCP ``tools/call`` of ``sql_query`` with ``key``."""
    protocol = "2026-07-28"
    meta = {
        "io.modelcontextprotocol/protocolVersion": protocol,
        "io.modelcontextprotocol/clientInfo": {"name": "dabench-tests", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    arguments = {"session_id": session, "sql": "SELECT 1"}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "sql_query", "arguments": arguments, "_meta": meta},
    }
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": protocol,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "sql_query",
    }
    return httpx.post(base_url + "/mcp", json=body, headers=headers, timeout=30)


@pytest.mark.slow
async def test_live_episodes_are_sealed_from_each_other(
    real_world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = ReferenceTarget(ReferenceTargetConfig(profile="a0"), TargetContext(real_world, tmp_path))
    await ref.start()
    try:
        assert ref.process is not None and ref.process.pid is not None
        pid = ref.process.pid
        secrets = [ref.admin_key, *ref.keys.values()]
        argv = Path(f"/proc/{pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        assert not [s for s in secrets if s.encode() in argv or s.encode() in environ]
        assert b"--auth-fd" in argv
        a = await ref.begin_episode("a")
        b = await ref.begin_episode("b")
        assert isinstance(a, ReferenceEpisode) and isinstance(b, ReferenceEpisode)
        assert a.episode_id != b.episode_id and a.keys["default"] != b.keys["default"]
        session_a = await a.open_session()
        assert not (await session_a.call("sql_query", {"sql": "SELECT 1"})).is_error
        # b's key with a's live session: refused, and never a's call
        conn_b = await b.connection("default")
        intruder = await conn_b.call(
            "sql_query", {"sql": "SELECT 1", "session_id": session_a.handle}
        )
        assert intruder.is_error and intruder.error_code == "SESSION_OF_ANOTHER_EPISODE"
        check_a = await a.read_audit([session_a.handle], 1)
        assert check_a.ok and check_a.audit_rows == 1, check_a.detail
        check_b = await b.read_audit([], 1)
        assert check_b.ok and check_b.rows[-1]["presented_session_id"] == session_a.handle
        # A protocol step as another identity gets a key of the same episode.
        teacher = await a.open_session("teacher")
        assert a.keys["teacher"] != ref.keys["teacher"]
        assert not (await teacher.call("sql_query", {"sql": "SELECT 2"})).is_error
        assert (await a.read_audit([session_a.handle, teacher.handle], 2)).ok
        key_a = a.keys["default"]
        await a.end_episode([session_a.handle])
        assert _mcp_post(ref.base_url, key_a, session_a.handle).status_code == 401
        # The close answered with the episode's audit rows: the read-back asks nothing more
        # (once), and falls back to the audit API after that.
        asked: list[str] = []

        def no_get(http: object) -> object:
            async def get(url: str, params: object, headers: object) -> object:
                asked.append(url)
                raise HarnessError("not asked")

            return get

        monkeypatch.setattr("dabench.targets.reference.loopback_get", no_get)
        closed = await ref.read_audit([session_a.handle, teacher.handle], 2, a.episode_id)
        assert closed.ok and closed.audit_rows == 2 and not asked, closed.detail
        with pytest.raises(HarnessError, match="not asked"):
            await ref.read_audit([session_a.handle, teacher.handle], 2, a.episode_id)
        monkeypatch.undo()
        assert _mcp_post(ref.base_url, b.keys["default"], "").status_code == 200
        await b.end_episode([])
        # Nothing the platform wrote holds a key.
        for path in tmp_path.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert not [s for s in [*secrets, key_a] if s.encode() in data], path
    finally:
        await ref.stop()


def test_bearer_key_placeholders_stay_out_of_argv() -> None:
    for placeholder in ("headers_json", "mcp_config_json"):
        with pytest.raises(ValueError, match="holds the bearer key and may not go into argv"):
            CommandAgentConfig(argv=["agent", f"--h={{{placeholder}}}"])
        config = CommandAgentConfig(argv=["agent"], env={"H": f"{{{placeholder}}}"})
        assert config.env == {"H": f"{{{placeholder}}}"}


def _play(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(app, ["play", *args, "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    out: dict[str, object] = json.loads(result.stdout)
    return out


@pytest.mark.slow
def test_play_json_holds_no_key(real_world: Path, run_dir: Path) -> None:
    _play("start", "--run", str(run_dir), "--world", str(real_world), "--smoke", "--profile", "a0")
    _play("next", "--run", str(run_dir))
    call = _play("call", "--run", str(run_dir), "sql_query", json.dumps({"sql": "SELECT 1"}))
    assert not call["is_error"], call
    state = read_state(run_dir)
    assert state.server is not None and state.open is not None
    work_dir = Path(state.server.work_dir)
    keys = read_keys(work_dir)
    episode_key = keys.episode_keys["default"]
    secrets = [keys.admin_key, episode_key, *keys.keys.values()]
    text = (run_dir / "play.json").read_text(encoding="utf-8")
    assert not [s for s in secrets if s in text]
    assert stat.S_IMODE(os.stat(work_dir / KEYS_FILE).st_mode) == 0o600
    base = f"http://127.0.0.1:{state.server.port}"
    assert _mcp_post(base, episode_key, state.open.session).status_code == 200
    done = _play("answer", "--run", str(run_dir), "FINAL ANSWER: 1")
    while not done["recorded"]:  # a multi-turn task
        done = _play("answer", "--run", str(run_dir), "FINAL ANSWER: 1")
    # the agent's direct call above is in the audit but not in the harness's count
    assert done["recorded"] and done["audit_ok"] is False
    assert _mcp_post(base, episode_key, state.open.session).status_code == 401
    assert read_keys(work_dir).episode_keys == {}
