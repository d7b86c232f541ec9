"""Task files: precise loader errors, duplicate ids, the canonical hash, selection, the lock."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.tasks.loader import dump_tasks, load_tasks
from dabench.tasks.lock import check_lock, compute_lock, read_lock, write_lock
from dabench.tasks.selection import TaskSelection, select_tasks

from .conftest import DATA, build_mini_world

BASIC = DATA / "tasks_basic.yaml"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_malformed_field_names_file_line_field_and_expectation() -> None:
    with pytest.raises(UserInputError) as err:
        load_tasks([DATA / "tasks_bad_field.yaml"])
    msg = str(err.value)
    assert msg.startswith(f"{DATA / 'tasks_bad_field.yaml'}:12: item 'bad.two' field 'difficulty'")
    assert "'easy', 'medium', 'hard' or 'expert'" in msg


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "- id: a\n  suite: s2\n  category: filters\n  difficulty: easy\n  prompt: p\n"
            "  grading:\n    kind: numeric\n",
            ":6: item 'a' field 'grading': grading.kind 'numeric' needs grading.truth_sql",
        ),
        (
            "- id: a\n  suite: s2\n  category: filters\n  difficulty: easy\n  prompt: p\n"
            "  budget: 0\n  grading: {kind: refusal}\n",
            ":6: item 'a' field 'budget': Input should be greater than or equal to 1",
        ),
        (
            "- id: a\n  suite: s2\n  category: filters\n  difficulty: easy\n  promt: p\n"
            "  grading: {kind: refusal}\n",
            ":5: item 'a' field 'promt': unknown field",
        ),
        (
            "- id: a\n  suite: s2\n  suite: s3\n",
            ":3: key 'suite' is given twice",
        ),
        ("- id: a\n  suite: [s2\n", ": invalid YAML"),
        ("tests:\n  - id: a\n", ":1: unknown top-level key 'tests'"),
    ],
)
def test_loader_errors(tmp_path: Path, body: str, expected: str) -> None:
    path = write(tmp_path, "t.yaml", body)
    with pytest.raises(UserInputError) as err:
        load_tasks([path])
    assert str(path) in str(err.value)
    assert expected in str(err.value)


def test_duplicate_ids_across_files_refused(tmp_path: Path) -> None:
    shutil.copy(BASIC, tmp_path / "a.yaml")
    shutil.copy(BASIC, tmp_path / "b.yaml")
    dup = r"b.yaml:3: duplicate task id 't.count-orders' \(first defined at .*a.yaml:3\)"
    with pytest.raises(UserInputError, match=dup):
        load_tasks([tmp_path])


def test_task_set_hash_is_canonical(tmp_path: Path) -> None:
    ts = load_tasks([BASIC])
    dumped = dump_tasks(ts, tmp_path / "dump.yaml")
    assert load_tasks([dumped]).hash() == ts.hash()
    reordered = ts.subset(ts.ids)
    reordered.tasks.reverse()
    assert reordered.hash() == ts.hash()
    changed = BASIC.read_text().replace("How many orders are there?", "How many orders?")
    assert load_tasks([write(tmp_path, "c.yaml", changed)]).hash() != ts.hash()


def test_selection() -> None:
    ts = load_tasks([BASIC])
    assert select_tasks(ts, TaskSelection(smoke=True)).ids == ["t.count-orders", "t.where-orders"]
    assert select_tasks(ts, TaskSelection(suites=["s1"])).ids == ["t.where-orders"]
    with pytest.raises(UserInputError, match="unknown task ids: nope"):
        select_tasks(ts, TaskSelection(tasks=["nope"]))
    with pytest.raises(UserInputError, match="matches no task"):
        select_tasks(ts, TaskSelection(suites=["s5"]))


def test_lock_computes_truths_and_refuses_stale(tmp_path: Path, mini_world: Path) -> None:
    ts = load_tasks([BASIC])
    lock = compute_lock(ts, mini_world)
    assert lock.truths["t.count-orders"].value == 40
    revenue = lock.truths["t.revenue"]
    assert revenue.naive_value == pytest.approx(revenue.value * 100)  # type: ignore[operator]
    assert lock.truths["t.where-orders"].entities == ["sales.orders"]
    path = write_lock(lock, tmp_path / "tasks.lock.json")
    check_lock(read_lock(path), ts, lock.world_hash, path)
    other = build_mini_world(tmp_path / "other", orders=41)
    with pytest.raises(UserInputError, match="stale lock: it was computed on world"):
        check_lock(read_lock(path), ts, compute_lock(ts, other).world_hash, path)
    edited = BASIC.read_text().replace("SELECT count(*) FROM sales.orders", "SELECT 1")
    ts2 = load_tasks([write(tmp_path, "edited.yaml", edited)])
    with pytest.raises(UserInputError, match=r"task 't\.count-orders' changed since it was locked"):
        check_lock(read_lock(path), ts2, lock.world_hash, path)


def test_lock_rejects_unknown_entity_and_bad_sql(tmp_path: Path, mini_world: Path) -> None:
    bad_entity = BASIC.read_text().replace("entities: [sales.orders]", "entities: [sales.nope]")
    with pytest.raises(UserInputError, match=r"entities not in the world's catalog: sales\.nope"):
        compute_lock(load_tasks([write(tmp_path, "e.yaml", bad_entity)]), mini_world)
    bad_sql = BASIC.read_text().replace("FROM sales.orders\n", "FROM sales.missing\n", 1)
    with pytest.raises(UserInputError, match="truth SQL failed on the world"):
        compute_lock(load_tasks([write(tmp_path, "s.yaml", bad_sql)]), mini_world)


def test_cli_schema_lock_and_error_exit(tmp_path: Path, mini_world: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["tasks", "schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["type"] == "array"
    assert "Task" in schema["$defs"] and "Protocol" in schema["$defs"]
    out = tmp_path / "lock.json"
    result = runner.invoke(
        app, ["tasks", "lock", "--world", str(mini_world), "--tasks", str(BASIC), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert set(read_lock(out).truths) == {"t.count-orders", "t.revenue", "t.where-orders"}


async def test_a_run_refuses_a_stale_lock(tmp_path: Path, mini_world: Path) -> None:
    from rich.console import Console

    from dabench.runner.experiment import Experiment
    from dabench.runner.run import ExperimentRun

    other = build_mini_world(tmp_path / "other", orders=41)
    lock_path = write_lock(compute_lock(load_tasks([BASIC]), other), tmp_path / "lock.json")
    exp = Experiment.model_validate(
        {
            "name": "stale",
            "world": {"dir": str(mini_world)},
            "tasks": {"builtin": False, "files": [str(BASIC)]},
            "lock": str(lock_path),
            "arms": [
                {
                    "name": "x",
                    "target": {"kind": "mcp", "command": ["true"]},
                    "agent": {"kind": "oracle"},
                }
            ],
        }
    )
    run = ExperimentRun(exp, tmp_path / "run", experiment_dir=tmp_path, console=Console(quiet=True))
    with pytest.raises(UserInputError, match="stale lock"):
        await run.execute()
    assert not (tmp_path / "run").exists()  # nothing written before validation
