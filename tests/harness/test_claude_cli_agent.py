"""The ``claude-cli`` agent against a real reference platform, with stand-in ``claude`` CLIs.

``platform_claude`` (below) behaves like the CLI with a model that makes one real MCP call: it
reads the MCP config it is given, calls ``sql_query`` on the platform over HTTP with the
configured headers (``session_id`` left empty, so the platform takes the ``X-DPS-Session``
header) and reports the call and its real result in stream-json. ``tests/providers/fake_claude.py``
makes no call at all: its reported tool call has no audit row.
"""

from __future__ import annotations

import json
import shutil
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.journal.store import Journal, load_grades, read_manifest

DATA = Path(__file__).parent / "data"
PROVIDERS_FAKE = Path(__file__).parent.parent / "providers" / "fake_claude.py"

PLATFORM_CLAUDE = """
import asyncio, json, os, sys

ENV = dict(os.environ)  # what the agent process was given (importing dabench sets variables)

from dabench.targets.mcp_lean import LeanMcpConnection


def emit(event):
    sys.stdout.write(json.dumps(event) + "\\n")


async def main():
    argv = sys.argv[1:]
    prompt = sys.stdin.read()
    config = json.load(open(argv[argv.index("--mcp-config") + 1], encoding="utf-8"))
    json.dump({"argv": argv, "prompt": prompt, "mcp_config": config, "cwd": os.getcwd(),
               "cwd_files": os.listdir("."), "env": ENV},
              open(os.environ["FAKE_CLAUDE_RECORD"], "w", encoding="utf-8"))
    (name, server), = config["mcpServers"].items()
    conn = LeanMcpConnection(server["url"], server["headers"])
    await conn.open()
    tools = [t.name for t in await conn.list_tools()]
    args = {"session_id": "", "sql": "SELECT count(*) AS n FROM sales.stores"}
    out = await conn.call("sql_query", args)
    await conn.close()
    emit({"type": "system", "subtype": "init", "session_id": "cli-1", "model": "claude-test",
          "tools": tools, "mcp_servers": [{"name": name, "status": "connected"}]})
    emit({"type": "assistant", "message": {"model": "claude-test", "content": [
        {"type": "tool_use", "id": "tu1", "name": f"mcp__{name}__sql_query", "input": args}]}})
    emit({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "tu1",
        "content": [{"type": "text", "text": out.text}], "is_error": out.is_error}]}})
    if os.environ.get("FAKE_CLAUDE_MODE") == "max_turns":
        emit({"type": "result", "subtype": "error_max_turns", "is_error": True, "num_turns": 1,
              "session_id": "cli-1", "total_cost_usd": 0.01, "usage": {"input_tokens": 5}})
        return 1
    rows = json.loads(out.text)["rows"]  # the reference platform's {columns, rows}
    text = f"There are {rows[0][0]} stores.\\nFINAL ANSWER: {rows[0][0]}"
    emit({"type": "result", "subtype": "success", "is_error": False, "result": text,
          "num_turns": 2, "duration_ms": 1500, "session_id": "cli-1", "total_cost_usd": 0.0125,
          "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 300}})
    return 0


sys.exit(asyncio.run(main()))
"""


def _install(bin_dir: Path, source: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "claude"
    path.write_text(f"#!{sys.executable}\n{source}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


TWO_TURNS = """
- id: w.stores-again
  suite: s2
  category: multi_turn
  difficulty: easy
  turns: ["I have a question about our stores.", "How many retail stores are there?"]
  grading: {kind: numeric, truth_sql: SELECT count(*) FROM sales.stores}
"""


CLAUDE_AGENT = (
    "{kind: claude-cli, model: sonnet, inherit_env: [FAKE_CLAUDE_RECORD, FAKE_CLAUDE_MODE]}"
)
"""The stand-in CLIs read these variables; a sealed CLI gets only what ``inherit_env`` names."""


def _experiment(
    tmp_path: Path,
    world: Path,
    task: str = "w.stores",
    agent: str = CLAUDE_AGENT,
) -> Path:
    text = (DATA / "tasks_w930.yaml").read_text(encoding="utf-8") + TWO_TURNS
    (tmp_path / "tasks.yaml").write_text(text, encoding="utf-8")
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"""name: claude-cli
world: {{dir: {json.dumps(str(world))}}}
tasks: {{builtin: false, files: [tasks.yaml], tasks: [{task}]}}
k: 1
arms:
  - name: a0
    target: {{kind: reference, profile: a0}}
    agent: {agent}
""",
        encoding="utf-8",
    )
    return path


def _run(
    tmp_path: Path,
    world: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    *extra: str,
    task: str = "w.stores",
) -> tuple[int, Path, dict[str, object]]:
    _install(tmp_path / "bin", source)
    record = tmp_path / "record.json"
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("FAKE_CLAUDE_RECORD", str(record))
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(_experiment(tmp_path, world, task)),
            "--out",
            str(run_dir),
            "--no-progress",
            "--unsealed",  # the stand-ins run on the harness's environment (they import dabench)
            *extra,
        ],
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, run_dir, json.loads(record.read_text(encoding="utf-8"))


def test_cli_calls_the_platform_with_session_header(
    real_world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, run_dir, record = _run(tmp_path, real_world, monkeypatch, PLATFORM_CLAUDE)
    assert code == 0
    (ep,) = Journal(run_dir).load()
    assert ep.status == "completed" and ep.agent == "claude-cli", ep.harness_error
    assert ep.model == "sonnet"
    (call,) = ep.tool_calls
    assert call.name == "sql_query" and call.arguments["sql"].startswith("SELECT count(*)")
    assert call.session == ep.sessions[0] and call.session.startswith("dps_")
    assert not call.is_error and '"rows"' in call.result
    # The platform audited the call under the episode's session: the audit check holds.
    assert ep.audit is not None and ep.audit.ok and ep.audit.audit_rows == 1, ep.audit
    assert ep.cost_usd == 0.0125 and ep.cost_source == "provider"
    assert (ep.usage.input, ep.usage.output, ep.usage.cache_read) == (100, 20, 300)
    assert ep.final_answer is not None and ep.final_answer.endswith(call.result.split("[[")[1][:2])
    assert [g.passed for g in load_grades(run_dir)] == [True]
    # The MCP config carries the key and the session handle as headers, never the prompt.
    (server,) = record["mcp_config"]["mcpServers"].values()  # type: ignore[attr-defined]
    assert server["url"].endswith("/mcp")
    assert server["headers"]["X-DPS-Session"] == ep.sessions[0]
    assert server["headers"]["Authorization"].startswith("Bearer epk_")  # the episode's key
    assert "dps_" not in str(record["prompt"])
    argv = list(record["argv"])  # type: ignore[call-overload]
    assert argv[argv.index("--max-turns") + 1] == "31"  # the task's budget (30) + 1
    assert "mcp__dabench__sql_query" in argv[argv.index("--allowedTools") + 1].split(",")
    assert "platform_info" not in argv[argv.index("--allowedTools") + 1]
    assert argv[argv.index("--model") + 1] == "sonnet"
    manifest = read_manifest(run_dir)
    assert not manifest.no_model and manifest.arms[0]["agent"]["kind"] == "claude-cli"
    # Sealed: only the MCP tools, an empty temporary cwd, an environment without dabench.
    assert argv[argv.index("--tools") + 1] == "" and "--strict-mcp-config" in argv
    denied = argv[argv.index("--disallowedTools") + 1].split(",")
    assert {"Bash", "Read", "Write", "Edit", "Glob", "Grep", "WebFetch", "Task"} <= set(denied)
    assert record["cwd_files"] == [] and record["cwd"] != str(Path.cwd())
    env = dict(record["env"])  # type: ignore[call-overload]
    assert "PYTHONPATH" not in env and "VIRTUAL_ENV" not in env
    assert set(env) <= {
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "FAKE_CLAUDE_RECORD",
        "FAKE_CLAUDE_MODE",
    }
    assert env["HOME"] == record["cwd"]  # HOME was not inherited (not in inherit_env)
    for value in env.values():
        assert str(run_dir) not in value and str(real_world) not in value
        assert "/src/dabench" not in value


def test_later_turns_resume_the_cli_conversation_on_the_same_session(
    real_world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, run_dir, record = _run(
        tmp_path, real_world, monkeypatch, PLATFORM_CLAUDE, task="w.stores-again"
    )
    assert code == 0
    (ep,) = Journal(run_dir).load()
    assert ep.status == "completed" and len(ep.sessions) == 1
    assert [(c.turn, c.session) for c in ep.tool_calls] == [
        (0, ep.sessions[0]),
        (1, ep.sessions[0]),
    ]
    assert ep.audit is not None and ep.audit.ok and ep.audit.audit_rows == 2
    assert ep.cost_usd == 0.025  # both CLI runs' total_cost_usd
    argv = list(record["argv"])  # type: ignore[call-overload]
    assert argv[argv.index("--resume") + 1] == "cli-1"  # the second (last recorded) run
    assert record["prompt"] == "How many retail stores are there?"


def test_max_turns_is_budget_exhausted(
    real_world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "max_turns")
    _code, run_dir, _ = _run(tmp_path, real_world, monkeypatch, PLATFORM_CLAUDE)
    (ep,) = Journal(run_dir).load()
    assert ep.status == "budget_exhausted" and len(ep.tool_calls) == 1
    assert ep.cost_usd == 0.01


def test_reported_calls_without_audit_rows_fail_the_audit_check(
    real_world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CLI that reports a platform tool call the platform never saw (the providers' fake
    makes none): the episode keeps the call, the audit check fails and the run exits 1;
    ``--allow-audit-gaps`` lets it exit 0."""
    source = PROVIDERS_FAKE.read_text(encoding="utf-8")
    code, run_dir, _ = _run(tmp_path, real_world, monkeypatch, source)
    (ep,) = Journal(run_dir).load()
    assert ep.status == "completed" and [c.name for c in ep.tool_calls] == ["sql_query"]
    assert ep.final_answer == "The answer is 42." and ep.cost_usd == 0.0234
    assert ep.audit is not None and not ep.audit.ok
    assert (ep.audit.expected_calls, ep.audit.audit_rows) == (1, 0)
    assert code == 1
    shutil.rmtree(run_dir)
    code, _, _ = _run(tmp_path, real_world, monkeypatch, source, "--allow-audit-gaps")
    assert code == 0


def test_missing_cli_is_an_input_error(
    real_world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(_experiment(tmp_path, real_world)),
            "--out",
            str(tmp_path / "r"),
            "--no-progress",
        ],
    )
    # dabench.cli.main prints "error: <message>" and exits 2 for a UserInputError.
    assert isinstance(result.exception, UserInputError), result.output
    assert "claude CLI ('claude') is not on PATH" in str(result.exception)
