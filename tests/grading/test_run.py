"""grade_run over a real run directory (journal, manifest, tasks.yaml, lock) and the CLI."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from tests.grading.builders import make_episode, make_task, sql_call
from tests.judge.scripted import ScriptedJudgeServer
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.grading import grade_run
from dabench.journal.records import RunManifest
from dabench.journal.store import Journal, load_grades, write_manifest
from dabench.tasks.loader import TaskSet, dump_tasks, item_hash
from dabench.tasks.lock import write_lock
from dabench.tasks.model import Truth, TruthLock

WORLD_HASH = "w" * 64


def _run_dir(tmp_path: Path, warehouse: Path, *, world_hash: str = WORLD_HASH) -> Path:
    run = tmp_path / "run"
    numeric = make_task({"kind": "numeric", "truth_sql": "SELECT 1"}, id="num1")
    exec_task = make_task(
        {"kind": "exec_sql", "truth_sql": "SELECT 1", "exec_sql_mode": "set"}, id="sql1"
    )
    tasks = TaskSet(tasks=[numeric, exec_task])
    dump_tasks(tasks, run / "tasks.yaml")
    lock = TruthLock(
        world_hash=world_hash,
        task_set_hash=tasks.hash(),
        truths={
            "num1": Truth(kind="numeric", value=42.0, task_hash=item_hash(numeric)),
            "sql1": Truth(
                kind="exec_sql",
                columns=["region"],
                rows=[["east"], ["north"], ["south"]],
                task_hash=item_hash(exec_task),
            ),
        },
    )
    write_lock(lock, run / "tasks.lock.json")
    now = datetime(2026, 1, 1, tzinfo=UTC)
    write_manifest(
        run,
        RunManifest(
            run_id="r1",
            dabench_version="0",
            git_commit=None,
            python_version="3.11",
            experiment={"world": {"seed": 930, "scale": 1, "dir": str(warehouse.parent)}},
            experiment_hash="e",
            world_seed=930,
            world_scale=1,
            world_hash=WORLD_HASH,
            task_set_hash=tasks.hash(),
            task_ids=["num1", "sql1"],
            k=1,
            arms=[],
            started_at=now,
        ),
    )
    journal = Journal(run)
    journal.append(make_episode("FINAL ANSWER: 42", task_id="num1"))
    journal.append(
        make_episode(
            "done",
            task_id="sql1",
            tool_calls=[sql_call(0, "SELECT DISTINCT region FROM sales.orders")],
        )
    )
    journal.append(
        make_episode(
            None,
            task_id="num1",
            status="harness_error",
            harness_error="boom",
            attempt=1,
            key="a0/num1/1",
        )
    )
    journal.append(make_episode("x", task_id="gone", key="a0/gone/0"))
    return run


def test_grade_run_writes_grades(tmp_path: Path, warehouse: Path) -> None:
    run = _run_dir(tmp_path, warehouse)
    grades = grade_run(run)
    by_key = {g.key: g for g in grades}
    assert by_key["a0/num1/0"].passed
    assert by_key["a0/sql1/0"].passed, by_key["a0/sql1/0"].reason
    assert by_key["a0/num1/1"].excluded and "boom" in by_key["a0/num1/1"].reason
    assert by_key["a0/gone/0"].excluded and "not in the task set" in by_key["a0/gone/0"].reason
    assert {g.key for g in load_grades(run)} == set(by_key)
    again = grade_run(run)
    assert [g.model_dump() for g in again] == [g.model_dump() for g in grades]
    assert len(load_grades(run)) == 4


def test_stale_lock_is_refused(tmp_path: Path, warehouse: Path) -> None:
    run = _run_dir(tmp_path, warehouse, world_hash="x" * 64)
    with pytest.raises(UserInputError, match="stale lock"):
        grade_run(run)


def test_cli_grade(tmp_path: Path, warehouse: Path) -> None:
    run = _run_dir(tmp_path, warehouse)
    result = CliRunner().invoke(app, ["grade", str(run), "--world", str(warehouse.parent)])
    assert result.exit_code == 0, result.output
    assert "wrote 4 grades" in result.output
    assert len(load_grades(run)) == 4


def test_cli_grade_bad_world(tmp_path: Path, warehouse: Path) -> None:
    run = _run_dir(tmp_path, warehouse)
    result = CliRunner().invoke(app, ["grade", str(run), "--world", str(tmp_path / "nope")])
    assert isinstance(result.exception, UserInputError)
    assert "no warehouse.duckdb" in str(result.exception)


def test_cli_grade_with_judge_uses_cache_on_regrade(
    tmp_path: Path, warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DABENCH_CACHE", str(tmp_path / "cache"))
    run = _run_dir(tmp_path, warehouse)
    args = [
        "grade",
        str(run),
        "--judge",
        "openai-compat:judge-1",
        "--judge-all",
        "--world",
        str(warehouse.parent),
    ]
    with ScriptedJudgeServer() as server:
        args += ["--judge-base-url", f"{server.url}/v1"]
        first = CliRunner().invoke(app, args)
        assert first.exit_code == 0, first.output
        assert len(server.requests) == 2, "two completed, gradable episodes are judged"
        assert "2 verdicts, 0 from the cache" in first.output
        second = CliRunner().invoke(app, args)
        assert second.exit_code == 0, second.output
        assert len(server.requests) == 2
        assert "2 verdicts, 2 from the cache" in second.output
    grades = {g.key: g for g in load_grades(run)}
    judged = grades["a0/num1/0"]
    assert judged.rubric_version == "v2" and judged.judge is not None
    assert judged.judge["model"] == "openai-compat:judge-1"
    assert judged.score == judged.scores["overall"] and "groundedness" in judged.scores
