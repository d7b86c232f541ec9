"""Per-task discrimination: which tasks tell agents apart, and which do not.

A *respondent* is one full attempt of the task set by one arm: (run, arm, attempt). Over the
respondents that have a graded episode of a task:

- ``pass_rate`` is the task's difficulty (share passed), also given per arm;
- ``point_biserial`` is the corrected item-rest correlation: the Pearson correlation between
  passing this task (0/1) and the respondent's pass rate on *the other* tasks. It is high when
  the agents that pass the task are the ones that do well elsewhere, near 0 when passing it
  says nothing about ability, and negative when weaker agents pass it more often;
- ``information`` is ``p (1 - p) r²``: the Fisher information of one episode of the task at the
  respondents' mean ability under a two-parameter logistic (2PL) model, with the point-biserial
  ``r`` standing in for the item's discrimination. :func:`most_informative` ranks tasks by it,
  so a plan can spend its episodes where they separate agents.

Flags (classical test theory conventions): ``all_pass`` / ``all_fail`` (no variation: the task
cannot discriminate in this population), ``too_few`` (fewer than :data:`MIN_RESPONDENTS`
respondents: pass rates only), ``undefined`` (the rest scores do not vary), ``negative``
(r < 0), ``low`` (r < :data:`LOW_DISCRIMINATION`), ``ok``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from dabench.stats.frame import EpisodeFrame
from dabench.stats.model import DiscriminationFlag, TaskDiscrimination

MIN_RESPONDENTS = 5
"""Respondents (run, arm, attempt) a task needs before its point-biserial is estimated."""
LOW_DISCRIMINATION = 0.2
"""Item-rest correlations below this are flagged ``low`` (the usual rule of thumb)."""


def _pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    if sxx <= 0 or syy <= 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def _flag(passed: int, n: int, r: float | None) -> DiscriminationFlag:
    if passed == n:
        return "all_pass"
    if passed == 0:
        return "all_fail"
    if n < MIN_RESPONDENTS:
        return "too_few"
    if r is None:
        return "undefined"
    if r < 0:
        return "negative"
    return "low" if r < LOW_DISCRIMINATION else "ok"


def task_discrimination(frames: Sequence[EpisodeFrame]) -> list[TaskDiscrimination]:
    """Discrimination of every task graded in ``frames`` (one frame per run), sorted by task
    id. Episodes that were not graded (harness errors, exclusions) count for nobody."""
    # outcome[task][respondent] = 1.0 / 0.0
    outcome: dict[str, dict[tuple[int, str, int], float]] = defaultdict(dict)
    info: dict[str, tuple[str, str]] = {}
    for run_i, frame in enumerate(frames):
        for i, ep in enumerate(frame.episodes):
            if not frame.graded[i]:
                continue
            respondent = (run_i, ep.arm, ep.attempt)
            outcome[ep.task_id][respondent] = 1.0 if frame.passed[i] else 0.0
            info.setdefault(ep.task_id, (ep.suite, ep.difficulty))
    totals: dict[tuple[int, str, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for by_respondent in outcome.values():
        for respondent, x in by_respondent.items():
            totals[respondent][0] += x
            totals[respondent][1] += 1.0
    rows: list[TaskDiscrimination] = []
    for task in sorted(outcome):
        xs: list[float] = []
        rest: list[float] = []
        arm_counts: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for respondent, x in outcome[task].items():
            arm_counts[respondent[1]][0] += x
            arm_counts[respondent[1]][1] += 1.0
            total, count = totals[respondent]
            if count < 2:
                continue  # no other task to correlate with
            xs.append(x)
            rest.append((total - x) / (count - 1))
        n = len(outcome[task])
        passed = round(sum(outcome[task].values()))
        p = passed / n
        r = _pearson(xs, rest) if len(xs) >= MIN_RESPONDENTS else None
        suite, difficulty = info[task]
        rows.append(
            TaskDiscrimination(
                task=task,
                suite=suite,
                difficulty=difficulty,
                respondents=n,
                passed=passed,
                pass_rate=p,
                per_arm={arm: c / m for arm, (c, m) in sorted(arm_counts.items())},
                point_biserial=r,
                information=p * (1 - p) * max(r or 0.0, 0.0) ** 2,
                flag=_flag(passed, n, r),
            )
        )
    return rows


def most_informative(rows: Sequence[TaskDiscrimination], n: int) -> list[TaskDiscrimination]:
    """The ``n`` tasks with the most information per episode (ties by task id), for a smaller
    run that keeps as much of the separation between agents as possible."""
    ranked = sorted(rows, key=lambda r: (-r.information, r.task))
    return ranked[: max(n, 0)]


def non_discriminating(rows: Sequence[TaskDiscrimination]) -> list[TaskDiscrimination]:
    """Tasks flagged as not separating agents (all passed, all failed, low or negative r)."""
    return [r for r in rows if r.flag in ("all_pass", "all_fail", "low", "negative")]
