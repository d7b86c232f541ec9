"""The journal store: durable appends, torn-line tolerance and repair, duplicates refused."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from dabench.errors import DabenchError
from dabench.journal.records import Episode, Grade, RunManifest, episode_key
from dabench.journal.store import (
    Journal,
    append_grades,
    load_grades,
    read_manifest,
    write_grades,
    write_manifest,
)


def make_episode(task: str, attempt: int = 0, arm: str = "a0") -> Episode:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return Episode(
        key=episode_key(arm, task, attempt),
        run_id="r1",
        arm=arm,
        task_id=task,
        attempt=attempt,
        suite="s2",
        category="analytical",
        difficulty="easy",
        status="completed",
        agent="oracle",
        target="reference:a0",
        prompts=["how many?"],
        final_answer="42",
        started_at=now,
        finished_at=now,
    )


def test_append_load_keys(tmp_path: Path) -> None:
    j = Journal(tmp_path)
    j.append(make_episode("t1"))
    j.append(make_episode("t2"))
    fresh = Journal(tmp_path)
    assert [e.task_id for e in fresh.load()] == ["t1", "t2"]
    assert fresh.keys() == {"a0/t1/0", "a0/t2/0"}
    assert fresh.torn is None


def test_duplicate_refused(tmp_path: Path) -> None:
    j = Journal(tmp_path)
    j.append(make_episode("t1"))
    with pytest.raises(DabenchError, match="already journaled"):
        Journal(tmp_path).append(make_episode("t1"))


def test_a_harness_error_may_be_retried_once_settled_never(tmp_path: Path) -> None:
    j = Journal(tmp_path)
    failed = make_episode("t1").model_copy(
        update={"status": "harness_error", "harness_error": "provider outage"}
    )
    j.append(failed)
    j.append(make_episode("t2"))
    assert Journal(tmp_path).settled_keys() == {"a0/t2/0"}
    j.append(make_episode("t1"))  # the retry of a harness error is accepted
    fresh = Journal(tmp_path)
    loaded = fresh.load()
    assert [(e.task_id, e.status) for e in loaded] == [("t1", "completed"), ("t2", "completed")]
    assert [e.harness_error for e in fresh.retried] == ["provider outage"]
    assert fresh.settled_keys() == fresh.keys() == {"a0/t1/0", "a0/t2/0"}
    with pytest.raises(DabenchError, match="already journaled"):
        fresh.append(make_episode("t1"))  # a measurement is never replaced


def test_a_repeated_settled_key_is_a_corrupt_journal(tmp_path: Path) -> None:
    line = make_episode("t1").model_dump_json() + "\n"
    (tmp_path / "episodes.jsonl").write_text(line + line, encoding="utf-8")
    with pytest.raises(DabenchError, match="appears more than once"):
        Journal(tmp_path).load()


def test_torn_last_line_reported_and_repaired(tmp_path: Path) -> None:
    j = Journal(tmp_path)
    j.append(make_episode("t1"))
    full = make_episode("t2").model_dump_json().encode()
    with (tmp_path / "episodes.jsonl").open("ab") as fh:
        fh.write(full[: len(full) // 2])
    j2 = Journal(tmp_path)
    assert [e.task_id for e in j2.load()] == ["t1"]
    assert j2.torn is not None and j2.torn.line == 2
    with pytest.raises(DabenchError, match="repair"):
        j2.append(make_episode("t3"))
    removed = j2.repair()
    assert removed is not None
    j2.append(make_episode("t2"))
    assert [e.task_id for e in Journal(tmp_path).load()] == ["t1", "t2"]


def test_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    j = Journal(tmp_path)
    j.append(make_episode("t1"))
    with (tmp_path / "episodes.jsonl").open("ab") as fh:
        fh.write(b'{"key": 1}\n')
    with (tmp_path / "episodes.jsonl").open("ab") as fh:
        fh.write(make_episode("t3").model_dump_json().encode() + b"\n")
    with pytest.raises(DabenchError, match=r"episodes.jsonl:2: not a valid Episode"):
        Journal(tmp_path).load()


def test_manifest_and_grades_roundtrip(tmp_path: Path) -> None:
    m = RunManifest(
        run_id="r1",
        dabench_version="0.1.0",
        git_commit=None,
        python_version="3.11",
        experiment={},
        experiment_hash="h",
        world_seed=930,
        world_scale=1,
        world_hash="w",
        task_set_hash="t",
        task_ids=["t1"],
        k=1,
        arms=[],
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    write_manifest(tmp_path, m)
    assert read_manifest(tmp_path) == m
    g1 = Grade(key="a0/t1/0", passed=False, score=0.0, kind="numeric", reason="wrong")
    g2 = Grade(key="a0/t1/0", passed=True, score=1.0, kind="numeric", reason="ok")
    append_grades(tmp_path, [g1])
    append_grades(tmp_path, [g2])
    assert load_grades(tmp_path) == [g2]
    write_grades(tmp_path, [g1])
    assert load_grades(tmp_path) == [g1]
    with pytest.raises(DabenchError, match="no manifest"):
        read_manifest(tmp_path / "nope")
