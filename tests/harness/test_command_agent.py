"""The ``command`` agent against a real reference platform: small agent programs (Python
scripts) get the prompt and the platform's MCP endpoint, connect with the official MCP client
and print an answer; the episode's tool calls come from the platform's audit log."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.harness.agent_runs import write_agent_experiment
from typer.testing import CliRunner

from dabench.agents.command import CommandAgentConfig
from dabench.cli import app
from dabench.journal.store import Journal, load_grades, read_manifest

DATA = Path(__file__).parent / "data"

SDK_AGENT = """
import asyncio, json, os, sys

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client


async def main() -> int:
    prompt = sys.argv[1]
    assert prompt == os.environ["DABENCH_PROMPT"]
    headers = json.loads(os.environ["DABENCH_MCP_HEADERS"])
    http = httpx2.AsyncClient(headers=headers)
    async with Client(streamable_http_client(os.environ["DABENCH_MCP_URL"], http_client=http),
                      cache=None) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "sql_query" in names, names
        n = int(os.environ.get("AGENT_CALLS", "1"))
        text = ""
        for _ in range(n):
            result = await client.call_tool(
                "sql_query", {"session_id": "", "sql": "SELECT count(*) AS n FROM sales.stores"})
            text = result.content[0].text
    count = json.loads(text)["rows"][0][0]
    info = {"turn": os.environ["DABENCH_TURN"], "turns": os.environ["DABENCH_TURNS"],
            "history": json.loads(os.environ["DABENCH_HISTORY"]), "budget": sys.argv[2]}
    print(json.dumps(info))
    print(f"I counted the stores.\\nFINAL ANSWER: {count}")
    if os.environ.get("AGENT_MODE") == "crash":
        print("something broke in the agent", file=sys.stderr)
        return 7
    return 0


sys.exit(asyncio.run(main()))
"""

# The hang case's agent uses the standard library only (raw MCP over streamable HTTP), so it
# starts in a fraction of a second however loaded the machine is: the episode's timeout can stay
# short and the verdict does not hinge on how long Python takes to import the MCP client.
STDLIB_HANG_AGENT = """
import json, os, sys, time, urllib.request

URL = os.environ["DABENCH_MCP_URL"]
HEADERS = {**json.loads(os.environ["DABENCH_MCP_HEADERS"]),
           "Content-Type": "application/json",
           "Accept": "application/json, text/event-stream"}


def post(message, session=None):
    headers = dict(HEADERS, **({"Mcp-Session-Id": session} if session else {}))
    req = urllib.request.Request(URL, json.dumps(message).encode(), headers, method="POST")
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.headers.get("Mcp-Session-Id"), resp.read().decode()


session, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "hang-agent", "version": "1"}}})
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
_, body = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
    "name": "sql_query", "arguments": {"session_id": "", "sql": "SELECT 1 AS n"}}}, session)
assert '"isError":false' in body.replace(" ", ""), body
print("called once; now hanging", flush=True)
time.sleep(600)
"""

TWO_TURNS = """
- id: w.stores-again
  suite: s2
  category: multi_turn
  difficulty: easy
  turns: ["I have a question about our stores.", "How many retail stores are there?"]
  grading: {kind: numeric, truth_sql: SELECT count(*) FROM sales.stores}
"""


def _run(
    tmp_path: Path, world: Path, agent: dict[str, object], task: str = "w.stores", *extra: str
) -> tuple[int, Path]:
    exp = write_agent_experiment(
        tmp_path, world, agent, [task], name="command", extra_tasks=TWO_TURNS
    )
    run_dir = tmp_path / "run"
    # The SDK agent runs on the harness's environment (the official MCP client): unsealed.
    args = ["run", str(exp), "--out", str(run_dir), "--no-progress", "--unsealed"]
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, run_dir


def _agent(tmp_path: Path, **settings: object) -> dict[str, object]:
    script = tmp_path / "agent.py"
    script.write_text(SDK_AGENT, encoding="utf-8")
    return {
        "kind": "command",
        "argv": [sys.executable, str(script), "{prompt}", "{budget}"],
        "label": "script:sdk",
        **settings,
    }


@pytest.mark.slow
def test_command_agent_plays_through_the_official_mcp_client(
    real_world: Path, tmp_path: Path
) -> None:
    code, run_dir = _run(tmp_path, real_world, _agent(tmp_path))
    assert code == 0
    (ep,) = Journal(run_dir).load()
    assert ep.status == "completed", ep.harness_error
    assert (ep.agent, ep.model, ep.provider) == ("command", "script:sdk", "command")
    assert ep.final_answer is not None and "I counted the stores." in ep.final_answer
    info = json.loads(ep.final_answer.splitlines()[0])
    assert info == {"turn": "1", "turns": "1", "history": [], "budget": "30"}
    # The call came from the platform's audit log, under the episode's session.
    (call,) = ep.tool_calls
    assert call.name == "sql_query" and call.session == ep.sessions[0]
    assert call.arguments == {"sql": "SELECT count(*) AS n FROM sales.stores"}
    assert not call.is_error and "audit log" in call.result
    assert ep.audit is not None and ep.audit.ok and ep.audit.audit_rows == 1
    assert [g.passed for g in load_grades(run_dir)] == [True]
    manifest = read_manifest(run_dir)
    assert manifest is not None and manifest.arms[0]["agent"]["kind"] == "command"
    assert not manifest.no_model


@pytest.mark.slow
def test_each_turn_runs_the_program_on_the_same_session(real_world: Path, tmp_path: Path) -> None:
    code, run_dir = _run(tmp_path, real_world, _agent(tmp_path), "w.stores-again")
    assert code == 0
    (ep,) = Journal(run_dir).load()
    assert ep.status == "completed" and len(ep.sessions) == 1 and len(ep.answers) == 2
    assert [(c.turn, c.session) for c in ep.tool_calls] == [
        (0, ep.sessions[0]),
        (1, ep.sessions[0]),
    ]
    assert ep.audit is not None and ep.audit.ok and ep.audit.audit_rows == 2
    info = json.loads(ep.answers[1].splitlines()[0])
    assert (info["turn"], info["turns"]) == ("2", "2")
    assert info["history"] == [
        {"role": "user", "content": "I have a question about our stores."},
        {"role": "assistant", "content": ep.answers[0]},
    ]


@pytest.mark.slow
def test_budget_crash_and_timeout(real_world: Path, tmp_path: Path) -> None:
    over = _agent(tmp_path, budget=1, env={"AGENT_CALLS": "2"})
    _code, run_dir = _run(tmp_path / "over", real_world, over)
    (ep,) = Journal(run_dir).load()
    assert ep.status == "budget_exhausted" and len(ep.tool_calls) == 2
    crash = _agent(tmp_path, env={"AGENT_MODE": "crash"})
    code, run_dir = _run(tmp_path / "crash", real_world, crash)
    (ep,) = Journal(run_dir).load()
    assert code == 3 and ep.status == "harness_error"
    assert ep.harness_error is not None and "exited with code 7" in ep.harness_error
    assert "something broke in the agent" in ep.harness_error
    # The stdlib-only agent makes its one call within a second of starting; 20 s leaves room
    # for that on a machine loaded many times over.
    hang_script = tmp_path / "hang_agent.py"
    hang_script.write_text(STDLIB_HANG_AGENT, encoding="utf-8")
    hang = {
        "kind": "command",
        "argv": [sys.executable, str(hang_script)],
        "label": "script:hang",
        "timeout_s": 20,
    }
    _code, run_dir = _run(tmp_path / "hang", real_world, hang)
    (ep,) = Journal(run_dir).load()
    assert ep.status == "timeout" and len(ep.tool_calls) == 1  # the call before it hung


def test_config_refuses_unknown_placeholders() -> None:
    with pytest.raises(ValueError, match="unknown placeholder"):
        CommandAgentConfig(argv=["agent", "{promt}"])
    assert CommandAgentConfig(argv=["agent", "{{literal}}", "{prompt}"]).argv[1] == "{{literal}}"
