"""``dabench play``: a scripted external agent plays episodes through the stepwise CLI against a
real reference platform (a detached ``dabench platform serve`` process); the episodes are
journaled, audit-checked, graded and reported like any arm's.

The scripted agent knows the gold (it is a test of recording and grading, not of difficulty):
it finds each task by its prompt in the built-in suites and answers from the task's gold SQL
through ``play call sql_query``, as the oracle agent does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from dabench.agents.oracle import ABSTAIN, REFUSAL, render_answer
from dabench.cli import app
from dabench.journal.store import Journal, load_grades, read_manifest
from dabench.play.state import read_state
from dabench.sqlresult import read_sql_result
from dabench.targets.process import pid_alive, stop_pid
from dabench.tasks.loader import load_builtin_tasks
from dabench.tasks.lock import read_lock
from dabench.tasks.model import Task


def play(*args: str, code: int = 0) -> dict[str, Any]:
    """Run ``dabench play ARGS --json`` in-process; check the exit code; the JSON output."""
    result = CliRunner().invoke(app, ["play", *args, "--json"])
    assert result.exit_code == code, (result.output, result.exception)
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def _by_prompt() -> dict[str, Task]:
    return {t.messages[0]: t for t in load_builtin_tasks().tasks}


def scripted_agent(run: Path, prompt: dict[str, Any] | None = None) -> list[str]:
    """Play every episode of ``run`` from the gold, starting with the open one whose
    ``prompt`` is given; the episode ids played."""
    tasks = _by_prompt()
    played: list[str] = []
    prompt = prompt or play("next", "--run", str(run))
    while not prompt["done"]:
        task = tasks[prompt["prompt"]]
        for _ in range(prompt["turns"] - 1):
            prompt = play("answer", "--run", str(run), "Understood.")["next_turn"]
        g = task.grading
        if g.kind == "refusal":
            text = REFUSAL
        elif g.kind == "abstain":
            text = ABSTAIN
        elif g.truth_sql:
            args = json.dumps({"sql": g.truth_sql, "limit": 1000})
            call = play("call", "--run", str(run), "sql_query", args)
            assert not call["is_error"], call
            columns, rows = read_sql_result(call["result"]).as_tuple()
            sql = g.truth_sql if g.kind == "exec_sql" else None
            text = render_answer(columns, rows, g.format, sql)
        else:
            text = g.entities[0]
        done = play("answer", "--run", str(run), f"FINAL ANSWER: {text}")
        assert done["recorded"] and done["audit_ok"], done
        played.append(done["episode_id"])
        prompt = play("next", "--run", str(run))
    return played


def _truth_strings(run: Path) -> list[str]:
    """Distinctive strings of the gold of every planned task (gold SQL, entities, values)."""
    ids = {p.task_id for p in read_state(run).plan}
    out: list[str] = []
    for task in load_builtin_tasks().tasks:
        if task.id in ids:
            g = task.grading
            out += [s for s in (g.truth_sql, g.naive_sql) if s]
            out += [e for e in g.wrong_aliases if len(e) > 6]
    return out


@pytest.mark.slow
def test_scripted_agent_plays_the_smoke_tasks(real_world: Path, run_dir: Path) -> None:
    started = play(
        "start", "--run", str(run_dir), "--profile", "a0", "--smoke", "--world", str(real_world)
    )
    assert started["arm"] == "a0" and started["skipped_protocols"] == 1  # the S5 smoke protocol
    planned = started["episodes"]
    assert planned >= 5
    # A prompt shows nothing of the task but its text: no task id, tags, category or truth.
    first = play("next", "--run", str(run_dir))
    assert set(first) == {
        "done", "episode_id", "turn", "turns", "prompt", "budget", "calls_used", "tools",
        "remaining", "instructions",
    }  # fmt: skip
    assert "FINAL ANSWER:" in first["instructions"]
    assert first["episode_id"] == "ep-001" and "sql_query" in first["tools"]
    assert "platform_info" not in first["tools"]
    # The run directory holds no answer key while the agent plays (the scripted agent below
    # sends gold SQL itself, so this is checked before it does).
    assert not (run_dir / "tasks.yaml").exists() and not (run_dir / "tasks.lock.json").exists()
    texts = [p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file()]
    secrets = _truth_strings(run_dir)
    assert len(secrets) >= planned
    for secret in secrets:
        assert not any(secret in t for t in texts), secret
    play("next", "--run", str(run_dir), code=2)  # an episode is open
    second = play("next", "--run", str(run_dir), "--abandon")  # ep-001: no answer
    assert second["episode_id"] == "ep-002"
    played = scripted_agent(run_dir, second)
    assert len(played) == planned - 1
    assert not (run_dir / "tasks.yaml").exists() and not (run_dir / "tasks.lock.json").exists()
    server = read_state(run_dir).server
    assert server is not None and pid_alive(server.pid)

    finished = play("finish", "--run", str(run_dir))
    assert finished["played"] == planned and finished["not_played"] == 0
    assert finished["audit_gaps"] == []
    assert not pid_alive(server.pid)
    episodes = Journal(run_dir).load()
    assert {e.agent for e in episodes} == {"external"} and {e.arm for e in episodes} == {"a0"}
    assert all(e.target == "reference:a0" for e in episodes)
    assert all(e.audit is not None and e.audit.ok for e in episodes)
    abandoned = episodes[0]
    assert abandoned.status == "no_answer" and abandoned.final_answer is None
    grades = {g.key: g for g in load_grades(run_dir)}
    assert set(grades) == {e.key for e in episodes}
    assert not grades[abandoned.key].passed
    assert all(grades[e.key].passed for e in episodes[1:]), [
        (k, g.checks) for k, g in grades.items() if not g.passed
    ]
    manifest = read_manifest(run_dir)
    assert manifest is not None and manifest.finished_at is not None
    assert manifest.arms[0]["agent"]["kind"] == "external"
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    assert f"| `a0` | reference:a0 | external | — / — | {planned} |" in report
    assert read_lock(run_dir / "tasks.lock.json").truths
    play("finish", "--run", str(run_dir), code=2)  # already finished
    play("next", "--run", str(run_dir), code=2)


def test_budget_is_enforced_and_unknown_tools_count(real_world: Path, run_dir: Path) -> None:
    play(
        "start", "--run", str(run_dir), "--world", str(real_world), "--task",
        "s1.orders-source", "--budget", "2", "--label", "script:test",
    )  # fmt: skip
    play("call", "--run", str(run_dir), "list_tables", "{}", code=2)  # no open episode
    prompt = play("next", "--run", str(run_dir))
    assert prompt["budget"] == 2
    ok = play("call", "--run", str(run_dir), "list_tables", "{}")
    assert not ok["is_error"] and "sales.orders" in ok["result"] and ok["calls_used"] == 1
    unknown = play("call", "--run", str(run_dir), "search", '{"query": "orders"}')
    assert unknown["is_error"] and unknown["error_code"] == "UNKNOWN_TOOL"
    refused = play("call", "--run", str(run_dir), "list_tables", "{}", code=4)
    assert "budget is exhausted" in refused["error"]
    bad = play("call", "--run", str(run_dir), "sql_query", "{not json", code=2)
    assert "not JSON" in bad["error"]
    done = play("answer", "--run", str(run_dir), "FINAL ANSWER: sales.orders")
    assert done["status"] == "budget_exhausted" and done["tool_calls"] == 2
    (ep,) = Journal(run_dir).load()
    assert ep.status == "budget_exhausted" and ep.model == "script:test"
    # One call reached the platform; the unknown tool was answered by the harness.
    assert ep.audit is not None and ep.audit.ok and ep.audit.expected_calls == 1
    assert [c.session == ep.sessions[0] for c in ep.tool_calls] == [True, False]
    assert play("next", "--run", str(run_dir)) == {"done": True}
    play("finish", "--run", str(run_dir), "--no-grade")
    assert not list(run_dir.glob("report.*"))


@pytest.mark.slow
def test_multi_turn_task_keeps_one_session(real_world: Path, run_dir: Path) -> None:
    play(
        "start", "--run", str(run_dir), "--world", str(real_world), "--task",
        "s1.mt-refunds-for-orders",
    )  # fmt: skip
    first = play("next", "--run", str(run_dir))
    assert (first["turn"], first["turns"]) == (1, 3)
    play("call", "--run", str(run_dir), "list_tables", '{"pattern": "orders"}')
    second = play("answer", "--run", str(run_dir), "sales.orders")
    assert not second["recorded"] and second["next_turn"]["turn"] == 2
    assert second["next_turn"]["instructions"] is None  # shown with the first turn only
    assert "refunds" in second["next_turn"]["prompt"]
    play("call", "--run", str(run_dir), "describe_table", '{"table": "sales.refunds"}')
    play("answer", "--run", str(run_dir), "sales.refunds")
    status = play("status", "--run", str(run_dir))
    assert status["open"]["turn"] == 3 and status["open"]["calls_used"] == 2
    done = play("answer", "--run", str(run_dir), "FINAL ANSWER: sales.refunds.order_id")
    assert done["recorded"] and done["status"] == "completed"
    play("finish", "--run", str(run_dir))
    (ep,) = Journal(run_dir).load()
    assert len(ep.sessions) == 1 and [c.turn for c in ep.tool_calls] == [0, 1]
    assert ep.answers == ["sales.orders", "sales.refunds", "FINAL ANSWER: sales.refunds.order_id"]
    assert ep.audit is not None and ep.audit.ok and ep.audit.audit_rows == 2
    (grade,) = load_grades(run_dir)
    assert grade.passed


@pytest.mark.slow
def test_start_refuses_an_existing_run_and_an_empty_selection(
    real_world: Path, run_dir: Path
) -> None:
    args = ["start", "--run", str(run_dir), "--world", str(real_world)]
    err = play(*args, "--suite", "s5", code=2)
    assert "S5 lifecycle protocols" in err["error"] and not (run_dir / "play.json").exists()
    play(*args, "--task", "s1.orders-source")
    assert "already exists" in play(*args, "--task", "s1.orders-source", code=2)["error"]
    play("finish", "--run", str(run_dir), "--no-grade")


@pytest.mark.slow
def test_restart_after_the_platform_died(real_world: Path, run_dir: Path) -> None:
    play(
        "start", "--run", str(run_dir), "--world", str(real_world), "--task", "s1.orders-source",
    )  # fmt: skip
    first = play("next", "--run", str(run_dir))
    play("call", "--run", str(run_dir), "list_tables", "{}")
    server = read_state(run_dir).server
    assert server is not None
    play("restart", "--run", str(run_dir), code=2)  # it is running
    stop_pid(server.pid)
    down = play("call", "--run", str(run_dir), "list_tables", "{}", code=3)
    assert "play restart" in down["error"]
    assert play("restart", "--run", str(run_dir)) == {"restarted": True, "replanned": "ep-002"}
    again = play("next", "--run", str(run_dir))
    assert again["episode_id"] == "ep-002" and again["prompt"] == first["prompt"]
    play("answer", "--run", str(run_dir), "FINAL ANSWER: sales.orders")
    play("finish", "--run", str(run_dir))
    (ep,) = Journal(run_dir).load()  # the retry replaced the harness error
    assert ep.status == "completed" and ep.audit is not None and ep.audit.ok
    journal = Journal(run_dir)
    journal.load()
    assert [r.harness_error for r in journal.retried] == ["the platform died during the episode"]
