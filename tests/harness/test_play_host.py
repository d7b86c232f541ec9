"""``dabench play`` on any target: an arm of an experiment file (here a generic ``mcp`` target
that spawns the reference platform over stdio, as a third-party server would be) is held by a
detached play host between the commands. The scripted agent of test_play plays through it;
the host's token is required; a dead host is restarted and its open episode replanned; the
episodes are journaled, graded and reported with the target's own label and description."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from pathlib import Path

import pytest
import yaml
from tests.harness.test_play import play, scripted_agent

from dabench.errors import UserInputError
from dabench.journal.store import Journal, load_grades, read_manifest
from dabench.play.host import HostClient, read_address
from dabench.play.state import read_state
from dabench.targets.process import pid_alive, stop_pid

TASKS = ["s3.net-revenue.partner-revenue-2024", "s1.orders-source"]


def _experiment(tmp_path: Path, world: Path) -> Path:
    """Two arms: the reference a0, and ``stdio``: a generic MCP target whose relative paths
    (its working directory and the platform's state directory) resolve against the file."""
    exp_dir = tmp_path / "exp"
    exp_dir.mkdir()
    stdio = {
        "kind": "mcp",
        "name": "ref-stdio",
        "cwd": ".",
        "command": [
            sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world),
            "--profile", "a0", "--transport", "stdio", "--state-dir", "server-state",
        ],
        "session_argument": "session_id",
        "session_tool": {"name": "platform_info"},
    }  # fmt: skip
    oracle = {"kind": "oracle"}
    exp = {
        "name": "play-any-target",
        "world": {"dir": str(world)},
        "arms": [
            {"name": "a0", "target": {"kind": "reference", "profile": "a0"}, "agent": oracle},
            {"name": "stdio", "target": stdio, "agent": oracle, "suites": ["s1", "s3"]},
        ],
    }
    path = exp_dir / "exp.yaml"
    path.write_text(yaml.safe_dump(exp, sort_keys=False))
    return path


@pytest.mark.slow
def test_a_generic_mcp_arm_plays_through_the_host(
    real_world: Path, run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp = _experiment(tmp_path, real_world)
    tasks = [a for t in TASKS for a in ("--task", t)]
    refused = play("start", "--run", str(run_dir), "--experiment", str(exp), *tasks, code=2)
    assert "--arm" in refused["error"] and "a0, stdio" in refused["error"]
    play("start", "--run", str(run_dir), "--experiment", str(exp), "--arm", "x", code=2)
    import dabench.runner.experiment as experiments

    reads: list[Path] = []
    load = experiments.load_experiment

    def counted(path: Path, *args: object, **kwargs: object) -> object:
        reads.append(Path(path))
        return load(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(experiments, "load_experiment", counted)
    started = play(
        "start", "--run", str(run_dir), "--experiment", str(exp), "--arm", "stdio", *tasks
    )
    assert started["arm"] == "stdio" and started["episodes"] == 2
    assert reads == [exp]  # the experiment file is read once
    # The target's relative state directory resolved against the experiment file's directory.
    assert (exp.parent / "server-state").is_dir()
    server = read_state(run_dir).server
    assert server is not None and server.kind == "host" and pid_alive(server.pid)
    work = Path(server.work_dir)
    for name in ("keys.json", "host.json", "host-spec.json"):
        assert stat.S_IMODE(os.stat(work / name).st_mode) == 0o600, name
    address = read_address(work)
    assert address is not None and address.pid == server.pid
    assert address.description["kind"] == "mcp"
    # The host answers only its token.
    with pytest.raises(UserInputError, match="bad token"):
        asyncio.run(HostClient(server.port, "not-the-token").request("ping"))

    # The platform behind the host dies with it; the open episode is replanned on restart.
    first = play("next", "--run", str(run_dir))
    assert "sql_query" in first["tools"] and "platform_info" not in first["tools"]
    listed = play("call", "--run", str(run_dir), "list_tables", "{}")
    assert not listed["is_error"] and "orders" in listed["result"]
    stop_pid(server.pid)
    down = play("call", "--run", str(run_dir), "list_tables", "{}", code=3)
    assert "play restart" in down["error"]
    restarted = play("restart", "--run", str(run_dir))
    assert restarted == {"restarted": True, "replanned": "ep-003"}
    new_server = read_state(run_dir).server
    assert new_server is not None and new_server.pid != server.pid and pid_alive(new_server.pid)

    played = scripted_agent(run_dir)
    assert played == ["ep-002", "ep-003"]
    finished = play("finish", "--run", str(run_dir))
    assert finished["played"] == 2 and finished["audit_gaps"] == []
    assert not pid_alive(new_server.pid)
    journal = Journal(run_dir)
    episodes = journal.load()
    assert [r.harness_error for r in journal.retried] == ["the platform died during the episode"]
    assert {e.arm for e in episodes} == {"stdio"} and {e.target for e in episodes} == {
        "mcp:ref-stdio"
    }
    assert all(e.audit is not None and e.audit.ok and e.audit.source == "harness" for e in episodes)
    sql_calls = [c for e in episodes for c in e.tool_calls if c.name == "sql_query"]
    assert sql_calls and all(c.roles and "sql" in c.roles for c in sql_calls)
    grades = load_grades(run_dir)
    assert len(grades) == 2 and all(g.passed for g in grades), [g.checks for g in grades]
    manifest = read_manifest(run_dir)
    assert manifest is not None and manifest.arms[0]["target"]["kind"] == "mcp"
    assert "| `stdio` | mcp:ref-stdio | external |" in (run_dir / "report.md").read_text()


def test_an_unreadable_or_missing_host_is_a_harness_error() -> None:
    """A host that answers garbage, closes without answering, or is gone: the command gets a
    HarnessError (exit 3, the episode recorded as a harness error), never a traceback."""
    from dabench.errors import HarnessError
    from dabench.targets.process import free_port

    async def main() -> None:
        async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readline()
            writer.write(b'{"ok": "perhaps"}\n')
            await writer.drain()
            writer.close()

        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readline()
            writer.close()

        for handler, match in ((garbage, "unreadable reply"), (silent, "closed the connection")):
            server = await asyncio.start_server(handler, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            async with server:
                with pytest.raises(HarnessError, match=match):
                    await HostClient(port, "t").request("ping")
        with pytest.raises(HarnessError, match="unreachable"):
            await HostClient(free_port(), "t").request("ping")

    asyncio.run(main())


OWN_TASKS = """\
- id: mine.orders-2024
  suite: s2
  category: single_tool
  difficulty: easy
  prompt: How many orders were placed in 2024 (every status)?
  grading:
    kind: numeric
    truth_sql: SELECT count(*) FROM sales.orders WHERE year(order_date) = 2024
    tolerance_rel: 0.0
- id: mine.stores
  suite: s2
  category: single_tool
  difficulty: easy
  prompt: How many stores does the company have?
  grading:
    kind: numeric
    truth_sql: SELECT count(*) FROM sales.stores
    tolerance_rel: 0.0
"""


@pytest.mark.slow
def test_an_experiment_file_brings_its_own_tasks(
    real_world: Path, run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`play start --experiment` plays the file's task selection, its own task files included
    (relative to the file, recorded absolute), and `--task` narrows it to one of them."""
    exp_dir = tmp_path / "exp"
    exp_dir.mkdir()
    (exp_dir / "tasks.yaml").write_text(OWN_TASKS)
    exp = {
        "name": "own-tasks",
        "world": {"dir": str(real_world)},
        "tasks": {"files": ["tasks.yaml"], "builtin": False},
        "arms": [{"name": "a2", "target": {"kind": "reference", "profile": "a2"},
                  "agent": {"kind": "oracle"}}],
    }  # fmt: skip
    path = exp_dir / "exp.yaml"
    path.write_text(yaml.safe_dump(exp, sort_keys=False))
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)  # the task file resolves against the experiment file, not here
    started = play(
        "start", "--run", str(run_dir), "--experiment", str(path), "--task", "mine.stores"
    )
    assert started["arm"] == "a2" and started["episodes"] == 1
    assert [p.task_id for p in read_state(run_dir).plan] == ["mine.stores"]
    manifest = read_manifest(run_dir)
    assert manifest is not None
    assert manifest.experiment["tasks"]["files"] == [str((exp_dir / "tasks.yaml").resolve())]
    monkeypatch.chdir(tmp_path)  # a later command from another directory finds the file
    first = play("next", "--run", str(run_dir))
    assert first["prompt"] == "How many stores does the company have?"
    play("answer", "--run", str(run_dir), "FINAL ANSWER: 0")
    finished = play("finish", "--run", str(run_dir))
    assert finished["played"] == 1
    # Without --task: both of the file's tasks and no built-in one.
    whole = tmp_path / "whole"
    started = play("start", "--run", str(whole), "--experiment", str(path))
    try:
        assert started["episodes"] == 2
        assert {p.task_id for p in read_state(whole).plan} == {"mine.orders-2024", "mine.stores"}
    finally:
        server = read_state(whole).server
        if server is not None and pid_alive(server.pid):
            stop_pid(server.pid)


def test_later_commands_do_not_need_the_start_environment(
    real_world: Path, run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``${VAR}`` of the target is expanded once, by play start (its host inherits that
    environment); next, call and finish in a shell without the variable still work."""
    exp = _experiment(tmp_path, real_world)
    data = yaml.safe_load(exp.read_text())
    data["arms"][1]["target"]["env"] = {"DABENCH_PLAY_VAR": "${DABENCH_PLAY_VAR}"}
    exp.write_text(yaml.safe_dump(data, sort_keys=False))
    monkeypatch.setenv("DABENCH_PLAY_VAR", "set-at-start")
    play("start", "--run", str(run_dir), "--experiment", str(exp), "--arm", "stdio",
         "--task", TASKS[1])  # fmt: skip
    monkeypatch.delenv("DABENCH_PLAY_VAR")
    try:
        first = play("next", "--run", str(run_dir))
        assert "sql_query" in first["tools"]
        listed = play("call", "--run", str(run_dir), "list_tables", "{}")
        assert not listed["is_error"]
    finally:
        finished = play("finish", "--run", str(run_dir), "--abandon")
    assert finished["played"] == 1
