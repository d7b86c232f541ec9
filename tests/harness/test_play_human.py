"""The human baseline: a person plays through ``dabench play``'s interactive terminal, driven
here through a real pseudo-terminal (pexpect): the prompt shown, a tool called with tab-free
typing, the result shown as a table, the answer typed, the QA questions answered; the
episodes are recorded with the agent kind ``human`` and appear in the report, and the task-QA
file carries the task ids only once the run is finished."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from dabench.cli import app
from dabench.journal.store import Journal
from dabench.play.human import parse_call
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
