"""Trap tasks' naive answers against their graders on many worlds, without a platform.

For each seed, builds the world at scale 1 into the world cache (a seed the build refuses is
counted and skipped), locks the tasks on it and runs the naive check that ``dabench run
--world-seed random`` refuses a draw on (:func:`dabench.validation.tasks.naive_issues`). Prints
one row per trap task with a naive answer: on how many seeds its grader accepts the naive
answer (and the first few of them), the smallest gap |naive - truth| over the seeds in units
of the task's tolerance with its seed, and on how many seeds the task has no answer (its
truth or naive SQL gives no number; the static checks refuse such a draw), and on which seeds
the truth rounded to the decimal places its question asks for fails the grader (it also fits
the naive answer: :func:`dabench.validation.tasks.precision_issues`, which the static checks
refuse a draw on too). Usage::

    python3 benchmarks/naive_seeds.py --seeds 1-100 [--suite s6] [--tasks FILE] [--static]
    python3 benchmarks/naive_seeds.py --quick     # seed 7, S6, --static (checks the script runs)

``--static`` also runs the static checks ``dabench run --world-seed random`` refuses a draw on
(:func:`dabench.validation.tasks.static_checks`) for every selected task and lists the worlds
they refuse, with the tasks and kinds of issue. ``--tasks FILE`` reads a suite file instead of
the built-in suites (an older ``s6_expert.yaml`` from git, say, to measure a task before a
change). Worlds take about 10 MB each in $DABENCH_CACHE/worlds. Exit code 1 when any naive
answer is accepted or any rounded truth rejected.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
from pathlib import Path

from dabench.errors import UserInputError
from dabench.grading.numeric import tolerance
from dabench.tasks.loader import TaskSet, load_builtin_tasks, load_tasks
from dabench.tasks.lock import compute_lock
from dabench.tasks.model import TruthLock
from dabench.validation.tasks import (
    ValidationIssue,
    naive_issues,
    precision_issues,
    static_checks,
)
from dabench.world.cache import ensure_world, world_cache_dir
from dabench.world.traps import TrapInvariantError


def parse_seeds(text: str) -> list[int]:
    """``1-100`` or ``7,22,930`` (or a mix: ``1-10,930``) -> the seeds in order."""
    seeds: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        seeds += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
    return seeds


def _lock(traps: TaskSet, world: Path, no_answer: dict[str, int]) -> TruthLock:
    """The lock of every trap task whose truth and naive SQL give a number on ``world``; each
    task left out (no number: the world has no data for it, and a draw is refused on it) is
    counted in ``no_answer``."""
    try:
        return compute_lock(traps, world)
    except UserInputError:
        pass
    lock: TruthLock | None = None
    for task in traps.tasks:
        try:
            one = compute_lock(traps.subset([task.id]), world)
        except UserInputError:
            no_answer[task.id] += 1
            continue
        if lock is None:
            lock = one
        else:
            lock.truths.update(one.truths)
    assert lock is not None, "no trap task has an answer on this world"
    return lock


def _kind(issue: ValidationIssue) -> str:
    """A short kind for a static issue: a variant inside the tolerance as it stands or once
    rounded as asked, a truth rejected when rounded, or the check's own name."""
    if issue.check == "tolerance":
        return "rounded variant" if "rounded to the" in issue.detail else "variant"
    return "rounded truth" if issue.check == "precision" else issue.check


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-100", help="A range and/or list: 1-100,930.")
    parser.add_argument("--suite", default="", help="Only this suite's tasks (s1..s6).")
    parser.add_argument("--tasks", type=Path, help="A suite file instead of the built-in set.")
    parser.add_argument(
        "--quick", action="store_true", help="seed 7, S6, with --static (checks it runs)"
    )
    parser.add_argument(
        "--static",
        action="store_true",
        help="also run the static checks of a drawn world on every selected task (slower)",
    )
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.suite, args.static = "7", "s6", True
    tasks = load_tasks([args.tasks]) if args.tasks else load_builtin_tasks()
    if args.suite:
        tasks = tasks.subset(t.id for t in tasks.tasks if t.suite == args.suite)
    traps = TaskSet(tasks=[t for t in tasks.tasks if t.trap_classes and t.grading.naive_sql])
    accepted: dict[str, list[int]] = {t.id: [] for t in traps.tasks}
    careful_fails: dict[str, list[int]] = {t.id: [] for t in traps.tasks}
    smallest: dict[str, tuple[float, int]] = {}
    no_answer: dict[str, int] = {t.id: 0 for t in traps.tasks}
    built, refused = 0, 0
    static_refused: dict[int, list[str]] = {}
    for seed in parse_seeds(args.seeds):
        try:
            with contextlib.redirect_stderr(io.StringIO()):  # the build's progress lines
                world = ensure_world(seed, 1, world_cache_dir())
        except TrapInvariantError:
            refused += 1
            continue
        built += 1
        if args.static:
            with contextlib.redirect_stderr(io.StringIO()):
                issues = static_checks(tasks, world)[1]
            if issues:
                static_refused[seed] = sorted({f"{i.item} ({_kind(i)})" for i in issues})
        lock = _lock(traps, world, no_answer)
        for issue in naive_issues(traps, lock, world):
            accepted[issue.item].append(seed)
        for issue in precision_issues(traps, lock, world):
            careful_fails[issue.item].append(seed)
        for task in traps.tasks:
            truth = lock.truths.get(task.id)
            if truth is None or truth.value is None or truth.naive_value is None:
                continue
            gap = abs(truth.naive_value - truth.value)
            allowed = tolerance(truth.value, task.grading.tolerance_abs, task.grading.tolerance_rel)
            ratio = gap / allowed if allowed else (math.inf if gap else 0.0)
            if task.id not in smallest or ratio < smallest[task.id][0]:
                smallest[task.id] = (ratio, seed)
    print(
        "| task | naive accepted on | seeds (first 5) | smallest gap / tolerance | at seed "
        "| no answer on | rounded truth rejected on |"
    )
    print("| --- | ---: | --- | ---: | ---: | ---: | --- |")
    order = sorted(
        traps.tasks,
        key=lambda t: (
            -len(accepted[t.id]) - len(careful_fails[t.id]),
            smallest.get(t.id, (0, 0)),
        ),
    )
    for task in order:
        ratio, at = smallest.get(task.id, (math.nan, 0))
        first = ", ".join(str(s) for s in accepted[task.id][:5])
        careful = ", ".join(str(s) for s in careful_fails[task.id][:5])
        print(
            f"| `{task.id}` | {len(accepted[task.id])} | {first} | {ratio:.2f} | {at} "
            f"| {no_answer[task.id]} | {careful or '-'} |"
        )
    total = sum(len(v) for v in accepted.values())
    rounded = sum(len(v) for v in careful_fails.values())
    print(
        f"\n{built} worlds built, {refused} refused by the build; {len(traps.tasks)} trap tasks; "
        f"{total} naive answers accepted; {rounded} truths rejected when rounded as asked"
    )
    if args.static:
        print(
            f"static checks ({len(tasks.items)} items): {len(static_refused)} of {built} worlds "
            "refused"
        )
        for seed, found in static_refused.items():
            print(f"  seed {seed}: {'; '.join(found)}")
    return 1 if total or rounded else 0


if __name__ == "__main__":
    raise SystemExit(main())
