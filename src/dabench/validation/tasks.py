"""``dabench tasks validate``: prove every task's gold, grader and (for traps) naive answer.

Two kinds of checks:

- **Static** (:func:`static_checks`, no server): every truth SQL runs on the world and every
  entity id exists (the truth lock); every other catalog id a task names exists (known-wrong
  aliases, fast paths, protocol related ids and review targets); trap tasks carry a
  ``naive_sql`` and one ``caveat.<trap class>`` rubric item per class, and every rubric id is in
  the judge rubric; no two tasks are duplicates (same truth SQL and near-identical prompt);
  every truth SQL applies each world policy in its scope (:mod:`dabench.world.policies`) or
  the task is exempt (tag ``policy-exempt:<id>``) and its prompt says so; every numeric
  truth is honest about its tolerance (:mod:`dabench.validation.tolerance`: no policy-ignored
  or declared careless variant falls inside it unless the task says why); and the world's
  knowledge layer agrees with the policies (:mod:`dabench.world.consistency`).
- **Dynamic** (:func:`validate`): the oracle agent runs every task on every arm it applies to
  (real reference-platform processes, the real runner), the run is graded with
  :mod:`dabench.grading`, and each grade must pass; for trap tasks the oracle's episode with
  its answer replaced by the naive number must be rejected by the grader.

The naive check also runs without a platform (:func:`naive_issues`: the same
:func:`naive_rejected` on an episode that holds nothing but the naive answer, which is all a
numeric grade reads); ``dabench run --world-seed random`` refuses a drawn world on it.
"""

from __future__ import annotations

import asyncio
import difflib
import re
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from dabench.agents.oracle import format_number
from dabench.errors import HarnessError, UserInputError
from dabench.grading import grade_episode, grade_protocol_episode
from dabench.grading.numeric import asked_decimals
from dabench.journal.records import Episode, episode_key
from dabench.journal.store import Journal
from dabench.judge.rubric import load_rubric
from dabench.platform.profile import load_profile
from dabench.runner.experiment import Experiment
from dabench.stats.lifecycle import lifecycle_metrics
from dabench.tasks.engines import sql_in_dialect
from dabench.tasks.loader import SuiteItem, TaskSet, dump_tasks
from dabench.tasks.lock import LOCK_FILE, compute_lock, world_engine, write_lock
from dabench.tasks.model import Protocol, Task, Truth, TruthLock
from dabench.tasks.selection import applies_to_arm
from dabench.validation.tolerance import coincidence_notes, margins, tolerance_issues
from dabench.world.consistency import consistency_issues
from dabench.world.external_checks import discoverability_issues
from dabench.world.policy_data import policy_issues
from dabench.world.source import OpenWorld, open_world

DUPLICATE_PROMPT_RATIO = 0.9
"""Prompts at least this similar (difflib ratio on normalised text) with the same truth SQL
are duplicates."""
DEFAULT_ARMS: tuple[str, ...] = ("a0", "a1", "a2", "a3")
NAIVE_ACCEPTED = "the grader accepts the naive answer"
"""The detail of a ``naive`` issue (:func:`naive_issues` and the dynamic check)."""
ROUNDED_TRUTH_REJECTED = (
    "the truth rounded to the {} decimal place(s) the question asks for fails the grader: it "
    "also lies within the tolerance of the naive answer, so a careful answer would fail; ask "
    "for more places"
)
"""The detail of a ``precision`` issue (:func:`precision_issues`), formatted with the places."""


@dataclass
class ValidationIssue:
    """One failed check."""

    item: str
    check: str
    detail: str
    arm: str = ""


@dataclass
class ArmResult:
    """The oracle's verdict for one (item, arm)."""

    item: str
    arm: str
    passed: bool
    reason: str
    naive_rejected: bool | None = None
    """For trap tasks: whether the grader rejected the naive answer."""


@dataclass
class ValidationReport:
    """Everything ``dabench tasks validate`` found."""

    items: int = 0
    arms: list[str] = field(default_factory=list)
    results: list[ArmResult] = field(default_factory=list)
    issues: list[ValidationIssue] = field(default_factory=list)
    episodes: int = 0
    seconds: float = 0.0
    run_dir: Path | None = None
    lifecycle: dict[str, dict[str, float | int]] = field(default_factory=dict)
    """The oracle's S5 lifecycle metrics (``dabench.stats.lifecycle.lifecycle_metrics``)."""
    notes: list[ValidationIssue] = field(default_factory=list)
    """Careless variants equal to the truth on a non-authoring world (not failures)."""

    @property
    def ok(self) -> bool:
        """No check failed."""
        return not self.issues


# -- static checks -------------------------------------------------------------------------------


def _normalise_sql(sql: str) -> str:
    return " ".join(sql.lower().replace(";", " ").split())


def _normalise_prompt(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _prompt(item: SuiteItem) -> str:
    if isinstance(item, Task):
        return " ".join(item.messages)
    return " ".join(s.prompt or "" for s in item.steps)


def _truth_sqls(item: SuiteItem) -> list[str]:
    if isinstance(item, Task):
        return [item.grading.truth_sql] if item.grading.truth_sql else []
    return [s.grading.truth_sql for s in item.steps if s.grading and s.grading.truth_sql]


def duplicate_issues(items: Iterable[SuiteItem]) -> list[ValidationIssue]:
    """Pairs of tasks with the same truth SQL and near-identical prompts."""
    by_sql: dict[str, list[SuiteItem]] = {}
    for item in items:
        for sql in _truth_sqls(item):
            by_sql.setdefault(_normalise_sql(sql), []).append(item)
    issues: list[ValidationIssue] = []
    for group in by_sql.values():
        for i, a in enumerate(group):
            for b in group[i + 1 :]:
                if a.id == b.id:
                    continue
                ratio = difflib.SequenceMatcher(
                    None, _normalise_prompt(_prompt(a)), _normalise_prompt(_prompt(b))
                ).ratio()
                if ratio >= DUPLICATE_PROMPT_RATIO:
                    issues.append(
                        ValidationIssue(
                            a.id,
                            "duplicate",
                            f"same truth SQL as {b.id!r} and a near-identical prompt "
                            f"(similarity {ratio:.2f})",
                        )
                    )
    return issues


def _referenced_ids(item: SuiteItem) -> list[tuple[str, str]]:
    """(what, id) pairs of catalog ids the item names besides its graded entities."""
    refs: list[tuple[str, str]] = []
    if isinstance(item, Task):
        refs += [("fast_path", i) for i in item.fast_path]
        refs += [
            ("wrong_aliases", a) for a in item.grading.wrong_aliases if re.fullmatch(r"[\w.-]+", a)
        ]
        return refs
    refs += [("related_ids", i) for i in item.related_ids]
    for step in item.steps:
        if step.kind == "review" and step.action.get("sink") == "description":
            refs.append((f"steps[{step.name}].action.target", str(step.action.get("target"))))
        if step.grading is not None:
            refs += [(f"steps[{step.name}].grading.entities", e) for e in step.grading.entities]
    return refs


def _trap_issues(
    item: SuiteItem, rubric_ids: set[str], judged: set[str], classes: set[str]
) -> list[ValidationIssue]:
    """A trap task needs a naive SQL, trap classes the world defines (``classes``: its planted
    traps' or its ``rules.yaml`` rules'), and a ``caveat.<class>`` rubric item for each of its
    classes the judge rubric has one for (``judged``); other ids must be in ``rubric_ids``."""
    issues: list[ValidationIssue] = []
    if not isinstance(item, Task):
        return issues
    unknown = [r for r in item.rubric if r not in rubric_ids]
    if unknown:
        issues.append(
            ValidationIssue(item.id, "rubric", f"unknown rubric item(s): {', '.join(unknown)}")
        )
    if item.trap_classes:
        if not item.grading.naive_sql:
            issues.append(ValidationIssue(item.id, "trap", "a trap task needs grading.naive_sql"))
        undefined = [c for c in item.trap_classes if c not in classes]
        if undefined:
            issues.append(
                ValidationIssue(
                    item.id,
                    "trap",
                    f"trap class(es) {', '.join(undefined)} defined by no rule of the world "
                    f"(its classes: {', '.join(sorted(classes)) or 'none'})",
                )
            )
        missing = [
            c
            for c in item.trap_classes
            if f"caveat.{c}" in judged and f"caveat.{c}" not in item.rubric
        ]
        if missing:
            issues.append(
                ValidationIssue(
                    item.id,
                    "trap",
                    "missing caveat rubric item(s): " + ", ".join(f"caveat.{c}" for c in missing),
                )
            )
    return issues


def _policy_issues(item: SuiteItem, world: OpenWorld) -> list[ValidationIssue]:
    """Every policy of the world (its ``policies.yaml``) that a truth SQL is in scope of but
    does not apply."""
    checks: list[tuple[str, str]] = []
    if isinstance(item, Task):
        if item.grading.truth_sql:
            checks.append((item.grading.truth_sql, " ".join(item.messages)))
    else:
        checks += [
            (s.grading.truth_sql, s.prompt or "")
            for s in item.steps
            if s.grading is not None and s.grading.truth_sql
        ]
    found = [
        d for sql, prompt in checks for d in policy_issues(world.policies, sql, prompt, item.tags)
    ]
    return [ValidationIssue(item.id, "policy", detail) for detail in found]


def static_checks(
    task_set: TaskSet, world_dir: Path, notes: list[ValidationIssue] | None = None
) -> tuple[TruthLock | None, list[ValidationIssue]]:
    """The truth lock (``None`` when a truth fails) and every static issue; ``notes``, when
    given, receives the careless variants that equal the truth on a world other than the
    authoring one (:func:`dabench.validation.tolerance.authoring_world`)."""
    issues: list[ValidationIssue] = []
    lock: TruthLock | None = None
    try:
        lock = compute_lock(task_set, world_dir)
    except UserInputError as exc:
        issues.append(ValidationIssue("*", "truth", str(exc)))
    world = open_world(world_dir)
    ids = world.ids()
    judged = {i.id for i in load_rubric().items}
    # A hidden rule of the world may have a judged caveat; one is required only where the
    # judge rubric defines it.
    rubric_ids = judged | {f"caveat.{r.trap_class}" for r in world.rules}
    classes = {t.trap_class for t in world.traps}
    for item in task_set.items:
        for what, ref in _referenced_ids(item):
            if ref not in ids:
                issues.append(
                    ValidationIssue(item.id, "entity", f"{what}: {ref!r} is not in the catalog")
                )
        issues += _trap_issues(item, rubric_ids, judged, classes)
        issues += _policy_issues(item, world)
    issues += duplicate_issues(task_set.items)
    issues += knowledge_issues(world)
    if lock is not None:
        found = margins(task_set, lock, world_dir)
        issues += [
            ValidationIssue(item, "tolerance", detail) for item, detail in tolerance_issues(found)
        ]
        if notes is not None:
            notes += [
                ValidationIssue(item, "coincides", detail)
                for item, detail in coincidence_notes(found)
            ]
        issues += precision_issues(task_set, lock, world_dir)
    return lock, issues


def knowledge_issues(world: OpenWorld) -> list[ValidationIssue]:
    """Every disagreement between the world's knowledge layer and its policies, and every
    hidden rule not stated on a2 or given away on a0 (the same checks for every world)."""
    engine = world_engine(world)

    def run(sql: str) -> list[list[Any]]:
        return engine.run(sql_in_dialect(sql, engine.dialect))[1]

    try:
        found = consistency_issues(world.policies, world.catalog, world.pages, run)
    finally:
        engine.close()
    return [ValidationIssue("world", "knowledge", detail) for detail in found] + [
        ValidationIssue("world", "discoverability", detail)
        for detail in discoverability_issues(world)
    ]


# -- dynamic checks ------------------------------------------------------------------------------


def naive_rejected(episode: Episode, task: Task, truth: Truth, warehouse: Path | None) -> bool:
    """Whether the grader rejects the oracle's episode with its answer replaced by the naive
    number (the plausible wrong answer of a trap)."""
    assert truth.naive_value is not None
    naive = f"FINAL ANSWER: {format_number(truth.naive_value)}"
    return not _passes_with(episode, task, truth, warehouse, naive)


def _passes_with(
    episode: Episode, task: Task, truth: Truth, warehouse: Path | None, answer: str
) -> bool:
    """Whether the grader passes ``episode`` with its last answer replaced by ``answer``."""
    answers = [*episode.answers[:-1], answer] if episode.answers else [answer]
    fake = episode.model_copy(update={"answers": answers, "final_answer": answer})
    return grade_episode(fake, task, truth, warehouse=warehouse).passed


def rounded_truth_passes(
    episode: Episode, task: Task, truth: Truth, warehouse: Path | None
) -> bool:
    """Whether the grader accepts the truth rounded to the decimal places the question asks
    for (:func:`~dabench.grading.numeric.asked_decimals`; ``True`` when it asks for none). It
    fails when the rounded truth also lies within the tolerance of the trap's naive answer:
    the grader reads a value that fits both as a hedge, so a careful answer would fail."""
    places = asked_decimals(task.grading.tolerance_abs, task.grading.tolerance_rel)
    if places is None or truth.value is None:
        return True
    return _passes_with(episode, task, truth, warehouse, f"FINAL ANSWER: {truth.value:.{places}f}")


def _bare_episode(task: Task) -> Episode:
    """An episode of ``task`` that holds nothing but its prompts (a static grade's input)."""
    at = datetime.fromtimestamp(0, UTC)
    return Episode(
        key=episode_key("static", task.id, 1), run_id="static", arm="static", task_id=task.id,
        attempt=1, suite=task.suite, category=task.category, difficulty=task.difficulty,
        status="completed", agent="oracle", target="none", prompts=task.messages,
        started_at=at, finished_at=at,
    )  # fmt: skip


def _trap_truths(
    task_set: TaskSet, lock: TruthLock, world_dir: Path
) -> Iterator[tuple[Task, Truth, Path | None]]:
    """Each trap task of ``task_set`` with a naive answer in ``lock`` (``exec_sql`` tasks left
    out: their grade reads the SQL a played episode ran), its truth and the warehouse file to
    grade against (``None`` on a database server)."""
    world = open_world(world_dir)
    warehouse = None if world.dsn else world.warehouse_path
    for task in task_set.tasks:
        truth = lock.truths.get(task.id)
        if not task.trap_classes or truth is None or truth.naive_value is None:
            continue
        if task.grading.kind != "exec_sql":
            yield task, truth, warehouse


def precision_issues(task_set: TaskSet, lock: TruthLock, world_dir: Path) -> list[ValidationIssue]:
    """Every trap task whose truth, rounded to the decimal places its question asks for,
    fails its grader on the world ``lock`` was computed on (:func:`rounded_truth_passes`)."""
    issues: list[ValidationIssue] = []
    for task, truth, warehouse in _trap_truths(task_set, lock, world_dir):
        if task.grading.kind != "numeric":
            continue
        if not rounded_truth_passes(_bare_episode(task), task, truth, warehouse):
            places = asked_decimals(task.grading.tolerance_abs, task.grading.tolerance_rel)
            issues.append(
                ValidationIssue(task.id, "precision", ROUNDED_TRUTH_REJECTED.format(places))
            )
    return issues


def naive_issues(task_set: TaskSet, lock: TruthLock, world_dir: Path) -> list[ValidationIssue]:
    """Every trap task of ``task_set`` whose grader accepts its naive answer on the world
    ``lock`` was computed on, without a platform: :func:`naive_rejected` on an episode that
    holds nothing but the naive answer. A numeric grade reads only the last answer and the
    task, so this is the verdict the dynamic check reaches on every arm. ``exec_sql`` tasks
    are left to the dynamic check (their grade reads the SQL a played episode ran)."""
    issues: list[ValidationIssue] = []
    for task, truth, warehouse in _trap_truths(task_set, lock, world_dir):
        if not naive_rejected(_bare_episode(task), task, truth, warehouse):
            issues.append(ValidationIssue(task.id, "naive", NAIVE_ACCEPTED))
    return issues


def _experiment(
    world_dir: Path,
    arms: list[str],
    tasks_file: Path,
    lock_file: Path,
    concurrency: int,
    warehouse: str | None = None,
) -> Experiment:
    return Experiment.model_validate(
        {
            "name": "tasks-validate",
            "world": {"dir": str(world_dir.resolve())},
            "tasks": {"builtin": False, "files": [str(tasks_file)]},
            "lock": str(lock_file),
            "k": 1,
            "concurrency": concurrency,
            "episode_timeout_s": 300,
            "arms": [
                {
                    "name": arm,
                    "target": {"kind": "reference", "profile": arm, "warehouse": warehouse},
                    "agent": {"kind": "oracle"},
                }
                for arm in arms
            ],
        }
    )


def _judge_dynamic(
    report: ValidationReport,
    task_set: TaskSet,
    lock: TruthLock,
    episodes: list[Episode],
    world_dir: Path,
) -> None:
    world = open_world(world_dir)
    warehouse = None if world.dsn else world.warehouse_path
    items = {i.id: i for i in task_set.items}
    for ep in episodes:
        item = items[ep.task_id]
        if isinstance(item, Protocol):
            grade = grade_protocol_episode(ep, item)
            result = ArmResult(item.id, ep.arm, grade.passed and not grade.excluded, grade.reason)
        else:
            truth = lock.truths.get(item.id)
            grade = grade_episode(ep, item, truth, warehouse=warehouse)
            result = ArmResult(item.id, ep.arm, grade.passed and not grade.excluded, grade.reason)
            if item.trap_classes and truth is not None and truth.naive_value is not None:
                result.naive_rejected = naive_rejected(ep, item, truth, warehouse)
                if not result.naive_rejected:
                    report.issues.append(ValidationIssue(item.id, "naive", NAIVE_ACCEPTED, ep.arm))
        if ep.status != "completed":
            result.passed = False
            result.reason = f"{ep.status}: {ep.harness_error or ''}".strip(": ")
        if ep.audit is not None and not ep.audit.ok:
            report.issues.append(ValidationIssue(item.id, "audit", ep.audit.detail, ep.arm))
        if not result.passed:
            report.issues.append(ValidationIssue(item.id, "oracle", result.reason, ep.arm))
        report.results.append(result)


def validate(
    world_dir: Path,
    task_set: TaskSet,
    *,
    arms: list[str] | None = None,
    run_dir: Path | None = None,
    concurrency: int = 4,
    progress: bool = True,
    warehouse: str | None = None,
) -> ValidationReport:
    """Run every static check, then the oracle over ``task_set`` on ``arms`` (default a0..a3)
    and judge its episodes. ``run_dir`` keeps the oracle's run (default: a temporary one);
    ``warehouse`` serves the platforms' SQL from PostgreSQL (``platform serve --warehouse``)."""
    from dabench.runner.run import ExperimentRun  # heavy (MCP SDK): imported when validating

    t0 = time.perf_counter()
    chosen = list(arms or DEFAULT_ARMS)
    open_world(world_dir)  # a clear error for a directory that is not a world
    for arm in chosen:
        load_profile(arm)  # a clear error for an unknown profile, before any server starts
    report = ValidationReport(items=len(task_set.items), arms=chosen, run_dir=run_dir)
    lock, report.issues = static_checks(task_set, world_dir, report.notes)
    if lock is None:
        report.seconds = time.perf_counter() - t0
        return report
    with tempfile.TemporaryDirectory(prefix="dabench-validate-") as tmp:
        tasks_file = dump_tasks(task_set, Path(tmp) / "tasks.yaml")
        lock_file = write_lock(
            lock.model_copy(update={"task_set_hash": task_set.hash()}), Path(tmp) / LOCK_FILE
        )
        exp = _experiment(world_dir, chosen, tasks_file, lock_file, concurrency, warehouse)
        out = run_dir or Path(tmp) / "run"
        execution = ExperimentRun(exp, out, experiment_dir=Path(tmp), progress=progress)
        try:
            asyncio.run(execution.execute())
        except HarnessError as exc:
            report.issues.append(ValidationIssue("*", "harness", str(exc)))
        episodes = Journal(out).load()
    report.episodes = len(episodes)
    _judge_dynamic(report, task_set, lock, episodes, world_dir)
    report.lifecycle = lifecycle_metrics(episodes, {p.id: p for p in task_set.protocols})
    done = {(r.item, r.arm) for r in report.results}
    for item in task_set.items:
        for arm in chosen:
            if applies_to_arm(item, arm) and (item.id, arm) not in done:
                report.issues.append(ValidationIssue(item.id, "oracle", "no episode was run", arm))
    report.seconds = time.perf_counter() - t0
    return report


# -- presentation --------------------------------------------------------------------------------


def render_report(report: ValidationReport, task_set: TaskSet, console: Console) -> None:
    """A table with one row per item (a column per arm) and the list of issues."""
    table = Table("item", "suite", "grading", *report.arms, "naive rejected", title="validation")
    by_key = {(r.item, r.arm): r for r in report.results}
    for item in task_set.items:
        kind = "protocol" if isinstance(item, Protocol) else item.grading.kind
        cells: list[str] = []
        naive: set[bool] = set()
        for arm in report.arms:
            res = by_key.get((item.id, arm))
            cells.append(
                "" if res is None else ("[green]ok[/green]" if res.passed else "[red]FAIL[/red]")
            )
            if res is not None and res.naive_rejected is not None:
                naive.add(res.naive_rejected)
        naive_cell = (
            "" if not naive else ("[green]yes[/green]" if naive == {True} else "[red]NO[/red]")
        )
        table.add_row(item.id, item.suite, kind, *cells, naive_cell)
    console.print(table)
    for issue in report.issues:
        where = f"{issue.item}" + (f" @{issue.arm}" if issue.arm else "")
        console.print(f"[red]{issue.check}[/red] {where}: {issue.detail}")
    for note in report.notes:
        console.print(f"[yellow]note[/yellow] {note.item}: {note.detail}")
    if report.lifecycle:
        console.print(
            "lifecycle (oracle): "
            + ", ".join(
                f"{'duplicates found' if name == 'duplicate' else name} {m['passed']}/{m['total']}"
                for name, m in report.lifecycle.items()
            )
        )
    verdict = (
        "[green]all checks passed[/green]"
        if report.ok
        else f"[red]{len(report.issues)} issue(s)[/red]"
    )
    noted = f" ({len(report.notes)} careless variant(s) equal the truth on this world)"
    console.print(
        f"{report.items} items, {report.episodes} oracle episodes on {', '.join(report.arms)} "
        f"in {report.seconds:.1f}s: {verdict}{noted if report.notes else ''}"
    )


def default_world() -> Path:
    """The seed-930, scale-1 world from the world cache (built on first use)."""
    from dabench.world.cache import default_world as cached_world

    return cached_world()
