"""Worlds other than seed 930: the suites validate on them, and `dabench run --world-seed`
builds one, locks every task on it and records its seed (issue 29, item 6).

The full check (the oracle on a0..a3 over every task, on ten drawn seeds) is
benchmarks/world_seeds.py; these tests keep it cheap: two extra seeds statically, one oracle
run over S3 on a0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.journal.store import load_grades, read_manifest
from dabench.runner import world_seed
from dabench.runner.world_seed import draw_world_seed, parse_world_seed
from dabench.tasks.loader import TaskSet, load_tasks
from dabench.tasks.lock import compute_lock, read_world_manifest
from dabench.validation.tasks import ValidationIssue, naive_issues, static_checks
from dabench.validation.tolerance import margins, tolerance_issues
from dabench.world.cache import ensure_world

EXTRA_SEEDS = (7, 4)
"""Seed 7 failed the tolerance check on four tasks before issue 29. (Seed 1, checked here
before S6, now leaves one S6 question without an answer, its top key account having no closed
ticket: a draw refuses it.)"""
REFUSED_SEED = 22
"""The build refuses it: fiscal_calendar.revenue_fq1_2024's naive answer is 2.8 % off."""
NAIVE_ACCEPTED_SEEDS = {
    167107567: "s6.search-morning-sessions-checkout-fh1-fy2024",
    299522253: "s6.region-key-account-deep-dive",
    350001233: "s6.days-to-second-order-2023",
}
"""Drawn worlds on which an S6 task's naive answer passed its grader before issue 29 reshaped
the three tasks (docs/suites.md); the first is now s6.morning-session-share-fh1-fy2024."""
MEDIAN_TASK = """\
- id: test.days-to-second-order-2023-median
  suite: s6
  category: multi_step
  difficulty: expert
  prompt: >-
    For the customers whose first-ever completed order was placed in 2023 and who placed a
    second completed order, what is the median number of days between the first and the
    second completed order?
  trap_classes: [test_accounts, soft_deleted]
  rubric: [caveat.test_accounts, caveat.soft_deleted]
  grading:
    kind: numeric
    truth_sql: |
      WITH co AS (
        SELECT o.customer_id, o.order_date,
               row_number() OVER (PARTITION BY o.customer_id ORDER BY o.order_date, o.order_id) AS n
        FROM sales.orders o JOIN customers.customers c USING (customer_id)
        WHERE o.status = 'completed' AND c.signup_source <> 'crm' AND c.row_state <> 4)
      SELECT median(date_diff('day', a.order_date, b.order_date))
      FROM co a JOIN co b ON b.customer_id = a.customer_id AND a.n = 1 AND b.n = 2
      WHERE year(a.order_date) = 2023
    naive_sql: |
      WITH co AS (
        SELECT o.customer_id, o.order_date,
               row_number() OVER (PARTITION BY o.customer_id ORDER BY o.order_date, o.order_id) AS n
        FROM sales.orders o)
      SELECT median(date_diff('day', a.order_date, b.order_date))
      FROM co a JOIN co b ON b.customer_id = a.customer_id AND a.n = 1 AND b.n = 2
      WHERE year(a.order_date) = 2023
    tolerance_abs: 0.0
    tolerance_rel: 0.0
"""
"""s6.days-to-second-order-2023 as it was before issue 29 (a median of whole days): on seed
350001233 its naive median equals the truth (187.5 days), on seed 7 it does not."""


@pytest.fixture(scope="module")
def seed_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A world cache shared by this module's tests (DABENCH_CACHE/worlds layout)."""
    return tmp_path_factory.mktemp("seed-cache")


def _world(cache: Path, seed: int) -> Path:
    return ensure_world(seed, 1, cache / "worlds")


@pytest.mark.parametrize("seed", EXTRA_SEEDS)
def test_the_suites_pass_the_static_checks_on_another_seed(
    seed: int, seed_cache: Path, builtin: TaskSet
) -> None:
    world = _world(seed_cache, seed)
    notes: list[ValidationIssue] = []
    lock, issues = static_checks(builtin, world, notes)
    assert lock is not None
    assert issues == []
    # Every trap task's naive answer stays outside its tolerance on this world too.
    traps = {t.id for t in builtin.tasks if t.trap_classes}
    checked = 0
    for m in margins(builtin, lock, world):
        for v in m.variants:
            if v.source == "naive" and m.key in traps:
                # A careless answer exactly equal to the truth (the world has nothing for the
                # trap to exclude in that slice) is a note, not a margin (docs/world.md).
                equal = v.value is not None and v.value == m.truth
                assert v.value is not None and (equal or not m.inside(v)), (
                    seed, m.key, v.value, m.truth,
                )  # fmt: skip
                checked += 1
    assert checked == sum(1 for t in builtin.tasks if t.trap_classes and t.grading.naive_sql
                          and t.grading.kind == "numeric")  # fmt: skip


def test_a_variant_equal_to_the_truth_is_an_issue_only_on_the_authoring_world(
    seed_cache: Path, builtin: TaskSet
) -> None:
    world = _world(seed_cache, 7)
    lock = compute_lock(builtin, world)
    relaxed = margins(builtin, lock, world)
    strict = margins(builtin, lock, world, strict=True)
    assert tolerance_issues(relaxed) == []
    strict_issues = tolerance_issues(strict)
    # On seed 7 no test account is a Midwest key account: the careless count is the truth.
    assert any(
        task == "s3.mt-key-accounts-midwest" and "'test_accounts'" in text
        for task, text in strict_issues
    ), strict_issues
    noted = {m.key for m in relaxed if m.coincident}
    assert "s3.mt-key-accounts-midwest" in noted
    # Lifecycle protocols' steps have no margins to note (docs/world.md, "Fresh worlds").
    protocols = {p.id for p in builtin.protocols}
    assert {task for task, _ in strict_issues} - protocols <= noted


def test_parse_world_seed() -> None:
    assert parse_world_seed("random") is None
    assert parse_world_seed(" Random ") is None
    assert parse_world_seed("42") == 42
    for bad in ("-1", "abc", "1.5", str(2**63)):
        with pytest.raises(UserInputError, match="--world-seed"):
            parse_world_seed(bad)


def test_a_drawn_seed_the_build_refuses_is_replaced(seed_cache: Path, builtin: TaskSet) -> None:
    said: list[str] = []
    draws = iter([REFUSED_SEED, 7])
    seed = draw_world_seed(
        1, builtin, say=said.append, draw=lambda: next(draws), cache_dir=seed_cache / "worlds"
    )
    assert seed == 7
    assert len(said) == 1
    assert said[0].startswith(f"world seed {REFUSED_SEED} refused: trap ")
    assert "does not bite" in said[0]


def test_a_drawn_seed_on_which_the_grader_accepts_a_naive_answer_is_replaced(
    seed_cache: Path, tmp_path: Path
) -> None:
    suite = tmp_path / "median.yaml"
    suite.write_text(MEDIAN_TASK, encoding="utf-8")
    tasks = load_tasks([suite])
    said: list[str] = []
    draws = iter([350001233, 7])
    seed = draw_world_seed(
        1, tasks, say=said.append, draw=lambda: next(draws), cache_dir=seed_cache / "worlds"
    )
    assert seed == 7
    assert said == [
        "world seed 350001233 refused: test.days-to-second-order-2023-median: naive: the "
        "grader accepts the naive answer; drawing another"
    ]


@pytest.mark.parametrize("seed", sorted(NAIVE_ACCEPTED_SEEDS))
def test_the_reshaped_s6_tasks_reject_their_naive_answer_where_it_passed(
    seed: int, seed_cache: Path, builtin: TaskSet
) -> None:
    ids = ["s6.morning-session-share-fh1-fy2024", "s6.region-key-account-deep-dive",
           "s6.days-to-second-order-2023"]  # fmt: skip
    tasks = builtin.subset(ids)
    assert len(tasks.tasks) == 3
    world = _world(seed_cache, seed)
    lock = compute_lock(tasks, world)
    assert naive_issues(tasks, lock, world) == []
    for task_id in ids:
        truth = lock.truths[task_id]
        assert truth.value is not None and truth.naive_value is not None
        assert truth.naive_value != truth.value, (seed, task_id)


def test_run_world_seed_random_locks_every_task_on_the_drawn_world(
    seed_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DABENCH_CACHE", str(seed_cache))
    monkeypatch.setattr(world_seed.secrets, "randbelow", lambda bound: 7)
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["run", "--suite", "s3", "--arms", "a0", "--agent", "oracle", "--world-seed", "random",
         "--out", str(run_dir), "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 0, (result.output, result.exception)
    assert "world seed 7 (drawn at random), scale 1: repeat this world with --world-seed 7" in (
        result.output
    )
    world = read_world_manifest(_world(seed_cache, 7))
    manifest = read_manifest(run_dir)
    assert (manifest.world_seed, manifest.world_seed_random) == (7, True)
    assert manifest.world_hash == world.world_hash
    assert manifest.experiment["world"]["seed"] == 7
    lock = json.loads((run_dir / "tasks.lock.json").read_text(encoding="utf-8"))
    assert lock["world_hash"] == world.world_hash
    grades = load_grades(run_dir)
    assert len(grades) == len(manifest.task_ids) >= 30
    assert [g.key for g in grades if not g.passed] == []
    assert "seed 7 (drawn at random), scale 1" in (run_dir / "report.md").read_text("utf-8")


def test_run_world_seed_refuses_a_second_world(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["run", "--suite", "s3", "--arms", "a0", "--world-seed", "7", "--world", str(tmp_path),
         "--out", str(tmp_path / "run")],
    )  # fmt: skip
    assert isinstance(result.exception, UserInputError)  # `dabench` prints it, exit code 2
    assert "give either --world-seed or --world" in str(result.exception)
