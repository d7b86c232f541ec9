"""`dabench tasks validate` over every shipped item (oracle, real platform processes)."""

from __future__ import annotations

from pathlib import Path

from dabench.journal.store import Journal
from dabench.runner.protocol import lifecycle_metrics
from dabench.tasks.loader import TaskSet
from dabench.tasks.lock import compute_lock
from dabench.tasks.model import Task
from dabench.validation.tasks import (
    DEFAULT_ARMS,
    ValidationReport,
    naive_issues,
    naive_rejected,
    precision_issues,
)
from dabench.world.source import open_world


def test_every_task_and_protocol_validates(validation: ValidationReport) -> None:
    assert validation.ok, [(i.item, i.arm, i.check, i.detail) for i in validation.issues[:20]]


def test_each_item_ran_on_each_of_its_arms(validation: ValidationReport, builtin: TaskSet) -> None:
    """Every task and protocol played once on each arm it declares (no arms: a0..a3), and
    passed there; the protocols (S5, lifecycle) are a3's only."""
    assert validation.arms == list(DEFAULT_ARMS)
    ran = [(r.item, r.arm) for r in validation.results if r.passed]
    expected = [(i.id, arm) for i in builtin.items for arm in (i.arms or DEFAULT_ARMS)]
    assert sorted(ran) == sorted(expected)
    assert validation.episodes == len(expected)
    for p in builtin.protocols:
        assert p.arms == ["a3"], p.id


def test_naive_answer_rejected_for_every_trap(
    validation: ValidationReport, builtin: TaskSet
) -> None:
    traps = {t.id for t in builtin.tasks if t.trap_classes}
    checked = {r.item for r in validation.results if r.naive_rejected}
    assert traps <= checked


def test_the_naive_check_without_a_platform_agrees_with_the_oracle_episodes(
    validation: ValidationReport, builtin: TaskSet, suites_world: Path
) -> None:
    """`naive_issues` (what `--world-seed random` refuses a draw on) gives the verdict the
    oracle's played episodes give, for a naive answer the grader rejects (the shipped one) and
    for one it accepts (the truth itself)."""
    assert validation.run_dir is not None
    lock = compute_lock(builtin, suites_world)
    traps = [
        t for t in builtin.tasks if t.trap_classes and lock.truths[t.id].naive_value is not None
    ]
    assert len(traps) >= 60
    episodes = {e.task_id: e for e in Journal(validation.run_dir).load() if e.arm == "a2"}
    warehouse = open_world(suites_world).warehouse_path
    assert naive_issues(builtin, lock, suites_world) == []
    equal = lock.model_copy(deep=True)
    for t in traps:
        equal.truths[t.id].naive_value = equal.truths[t.id].value
    assert {i.item for i in naive_issues(builtin, equal, suites_world)} == {t.id for t in traps}
    for t in traps:
        assert naive_rejected(episodes[t.id], t, lock.truths[t.id], warehouse), t.id
        assert not naive_rejected(episodes[t.id], t, equal.truths[t.id], warehouse), t.id


def test_oracle_lifecycle_metrics_are_perfect(
    validation: ValidationReport, builtin: TaskSet
) -> None:
    assert validation.run_dir is not None
    episodes = [e for e in Journal(validation.run_dir).load() if e.suite == "s5"]
    metrics = lifecycle_metrics(episodes, {p.id: p for p in builtin.protocols})
    assert metrics["duplicate"]["rate"] == 0.0
    for name in ("capture", "recall", "promotion", "transfer", "update", "abstention"):
        assert metrics[name]["rate"] == 1.0, (name, metrics[name])
    for ep in episodes:
        assert ep.audit is not None and ep.audit.ok, ep.audit
        assert len(set(ep.sessions)) >= 3


def test_a_truth_rounded_as_asked_must_not_also_fit_the_naive_answer(
    suites_world: Path,
) -> None:
    """Asked for one decimal place, the careful answer to 1.04 is 1.0, which also lies within
    0.05 of the naive 0.98: the grader reads it as a hedge and fails it, so the static checks
    (and a world draw) refuse the task; asked for two places, 1.04 passes and the check is
    quiet. The naive answer itself is rejected in both."""
    tasks = [
        Task.model_validate(
            {
                "id": f"t{places}",
                "suite": "s3",
                "category": "knowledge_trap",
                "difficulty": "hard",
                "prompt": f"A ratio to {places} decimal place(s)?",
                "trap_classes": ["test_accounts"],
                "grading": {
                    "kind": "numeric",
                    "truth_sql": "SELECT 1.04",
                    "naive_sql": "SELECT 0.98",
                    "tolerance_abs": 0.5 * 10**-places,
                    "tolerance_rel": 0.0,
                },
            }
        )
        for places in (1, 2)
    ]
    ts = TaskSet(tasks=tasks)
    lock = compute_lock(ts, suites_world)
    assert naive_issues(ts, lock, suites_world) == []
    found = precision_issues(ts, lock, suites_world)
    assert [(i.item, i.check) for i in found] == [("t1", "precision")]
    assert "1 decimal place(s)" in found[0].detail
