"""The human baseline: a person plays through ``dabench play``'s interactive terminal, driven
here through a real pseudo-terminal (pexpect): the prompt shown, a tool called with tab-free
typing, the result shown as a table, the answer typed, the QA questions answered; the
episodes are recorded with the agent kind ``human`` and appear in the report, and the task-QA
file carries the task ids only once the run is finished."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from pathlib import Path

import duckdb
import pytest
from rich.console import Console
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.journal.store import Journal
from dabench.play.human import example_call, parse_call, play_interactively
from dabench.play.session import PlayOptions, platform_running, status_lines
from dabench.play.state import read_state
from dabench.targets.process import pid_alive
from dabench.tasks.loader import load_builtin_tasks
from dabench.tasks.model import Task

pexpect = pytest.importorskip("pexpect")
SRC = Path(__file__).resolve().parents[2] / "src"


def _two_tasks() -> tuple[Task, Task]:
    smoke = [t for t in load_builtin_tasks().tasks if t.smoke and len(t.messages) == 1]
    entity = next(t for t in smoke if t.grading.kind == "entity")
    numeric = next(t for t in smoke if t.grading.kind == "numeric")
    return entity, numeric


def _key(task: Task) -> str:
    return " ".join(task.messages[0].split()[:4])


def test_parse_call_forms() -> None:
    assert parse_call('sql_query {"sql": "SELECT 1"}') == ("sql_query", {"sql": "SELECT 1"})
    assert parse_call('search query="net revenue" limit=5') == (
        "search",
        {"query": "net revenue", "limit": 5},
    )
    assert parse_call("list_tables") == ("list_tables", {})


SEARCH = {
    "name": "search",
    "input_schema": {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"],
    },
}
SQL = {
    "name": "sql_query",
    "input_schema": {"properties": {"sql": {"type": "string"}}, "required": ["sql"]},
}
DESCRIBE = {
    "name": "describe",
    "input_schema": {
        "properties": {"dataset": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["dataset", "limit"],
    },
}


def test_one_required_argument_takes_free_text() -> None:
    tools = [SEARCH, SQL, DESCRIBE]
    assert parse_call("search list price", tools) == ("search", {"query": "list price"})
    assert parse_call("sql_query SELECT * FROM t WHERE a=1", tools) == (
        "sql_query",
        {"sql": "SELECT * FROM t WHERE a=1"},
    )
    # key=value and JSON keep working; two required arguments are never free text.
    assert parse_call('search query="net revenue" limit=5', tools) == (
        "search",
        {"query": "net revenue", "limit": 5},
    )
    assert parse_call('search {"query": "x"}', tools) == ("search", {"query": "x"})
    with pytest.raises(UserInputError, match="expected key=value"):
        parse_call("describe orders", tools)


def test_one_example_call_per_tool() -> None:
    assert example_call(SEARCH) == "search net revenue"
    assert example_call(SQL) == "sql_query SELECT 1"
    assert example_call(DESCRIBE) == 'describe dataset="text" limit=5'
    assert example_call({"name": "list_tables", "input_schema": {}}) == "list_tables"
    for tool in (SEARCH, SQL, DESCRIBE):  # each example parses back into a call of the tool
        name, args = parse_call(example_call(tool), [SEARCH, SQL, DESCRIBE])
        assert name == tool["name"] and set(args) == set(tool["input_schema"]["required"])


def test_status_is_words() -> None:
    info = {
        "run_dir": "runs/p", "arm": "a2", "episodes": 3, "recorded": 1, "remaining": 2,
        "statuses": {"no_answer": 1}, "finished": False, "platform_running": False,
        "open": {"episode_id": "ep-002", "turn": 1, "turns": 2, "calls_used": 3, "budget": 10},
    }  # fmt: skip
    text = "\n".join(status_lines(info))
    assert "recorded as: 1 no answer" in text
    assert "platform: stopped (start it again with `dabench play restart --run runs/p`)" in text
    assert "open episode: ep-002, turn 1 of 2, 3 of 10 tool calls used" in text
    assert not any(c in text for c in "{}[]'") and "None" not in text and "True" not in text


def _reader(lines: list[str]):  # type: ignore[no-untyped-def]
    feed = iter(lines)

    def read(prompt: str, words: list[str]) -> str:
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None

    return read


@pytest.mark.slow
def test_quit_stops_the_platform_and_resuming_starts_it(run_dir: Path, real_world: Path) -> None:
    entity, numeric = _two_tasks()
    opts = PlayOptions(
        profile="a2", tasks=[entity.id, numeric.id], world_dir=real_world, label="human",
        agent_kind="human",
    )  # fmt: skip
    out = io.StringIO()
    console = Console(file=out, width=200)

    def play(*lines: str) -> str:
        out.seek(0)
        out.truncate()
        play_interactively(
            run_dir, opts, qa=False, read=_reader(list(lines)), console=console,
            grade=lambda _: None, report=lambda _: [],
        )  # fmt: skip
        return out.getvalue()

    first = play("search list price", "/quit")
    assert "example call" in first and "search net revenue" in first  # the tools, shown once
    assert "search #1" in first  # the free-text call went through
    pid = read_state(run_dir).server.pid  # type: ignore[union-attr]
    assert not pid_alive(pid) and not platform_running(run_dir)
    assert f"the platform (pid {pid}) is stopped" in first
    assert f"dabench play --run {run_dir}" in first
    again = play("/quit")
    assert "platform started again" in again
    assert "lost its session: it is played again later as ep-003" in again
    assert not platform_running(run_dir)
    status = CliRunner().invoke(app, ["play", "status", "--run", str(run_dir)])
    assert "platform: stopped" in status.output and "1 harness error" in status.output


@pytest.mark.slow
def test_a_person_plays_at_a_pseudo_terminal(run_dir: Path, real_world: Path) -> None:
    entity, numeric = _two_tasks()
    con = duckdb.connect(str(real_world / "warehouse.duckdb"), read_only=True)
    assert numeric.grading.truth_sql
    value = con.execute(numeric.grading.truth_sql).fetchone()[0]  # type: ignore[index]
    con.close()
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200", "TERM": "xterm"}
    argv = ["-m", "dabench.cli", "play", "--run", str(run_dir), "--profile", "a0",
            "--world", str(real_world), "--task", entity.id, "--task", numeric.id,
            "--label", "human:tester", "--qa"]  # fmt: skip
    child = pexpect.spawn(sys.executable, argv, env=env, encoding="utf-8", timeout=120,
                          dimensions=(60, 200))  # fmt: skip
    try:
        for _ in range(2):
            child.expect([re.escape(_key(entity)), re.escape(_key(numeric))])
            shown = child.after
            child.expect("tool>")
            if shown == _key(numeric):
                sql = json.dumps({"sql": numeric.grading.truth_sql})
                child.sendline(f"sql_query {sql}")
                child.expect(r"\(1 rows\)")  # the result shown as a table
                child.expect("tool>")
                child.sendline(f"/answer FINAL ANSWER: {value}")
            else:
                child.sendline("list_tables")
                child.expect("tool>")
                child.sendline(f"/answer FINAL ANSWER: {entity.grading.entities[0]}")
            child.expect(r"recorded \(completed")
            child.expect(r"\[y/n\]")
            child.sendline("y")
            child.expect(r"\[y/n\]")
            child.sendline("y" if shown == _key(numeric) else "n")
            child.expect("note")
            child.sendline("checked by the test")
        child.expect("report: ")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, child.before
    episodes = Journal(run_dir).load()
    assert len(episodes) == 2 and {e.agent for e in episodes} == {"human"}
    assert {e.model for e in episodes} == {"human:tester"}
    assert all(e.audit is not None and e.audit.ok for e in episodes)
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert "human" in report
    grades = [json.loads(line) for line in (run_dir / "grades.jsonl").open()]
    assert all(g["passed"] for g in grades), grades
    qa = json.loads((run_dir / "task_qa.json").read_text(encoding="utf-8"))
    assert {q["task_id"] for q in qa} == {entity.id, numeric.id}
    answerable = {q["task_id"]: q["answerable"] for q in qa}
    assert answerable == {entity.id: False, numeric.id: True}
    shown = CliRunner().invoke(app, ["tasks", "validate", "--qa", str(run_dir / "task_qa.json")])
    assert shown.exit_code == 0, shown.output
    assert "2 QA answers, 1 task(s) flagged unclear or unanswerable" in shown.output
