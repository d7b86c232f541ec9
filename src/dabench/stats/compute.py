"""``compute_stats``: every statistic of a run, per arm and breakdown, with bootstrap CIs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from dabench.errors import UserInputError
from dabench.stats.aggregates import (
    TaskTable,
    consistency,
    efficiency,
    failure_counts,
    reliability,
    task_table,
)
from dabench.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    column_quantiles,
    group_rng,
    resampled_sums,
)
from dabench.stats.caveats import run_caveats
from dabench.stats.discrimination import task_discrimination
from dabench.stats.estimators import estimator_table
from dabench.stats.frame import Bools, EpisodeFrame, Floats, build_frame
from dabench.stats.funnel import lifecycle_funnel
from dabench.stats.lifecycle import arm_lifecycle
from dabench.stats.model import (
    ArmSummary,
    Delta,
    Dimension,
    GroupStats,
    Interval,
    RunStats,
)
from dabench.stats.rundir import RunData
from dabench.stats.seed003 import arm_adjusted_overall
from dabench.tasks.model import DIFFICULTY_WEIGHT

SUITE_ORDER = ("s1", "s2", "s3", "s4", "s5", "s6")


class _Estimators:
    """pass^j tables for j = 1..k and the pass@k table, sized to the largest n."""

    def __init__(self, k: int, max_n: int) -> None:
        self.k = k
        size = max(max_n, k)
        self.hat = {j: estimator_table(size, j) for j in range(1, k + 1)}
        self.at = estimator_table(size, k, at=True)


def _ordered(values: Floats | np.ndarray, order: tuple[str, ...] = ()) -> list[str]:
    present = {str(v) for v in np.unique(values) if str(v)}
    ranked = [v for v in order if v in present]
    return ranked + sorted(present - set(ranked))


def dimension_values(frame: EpisodeFrame) -> Iterator[tuple[Dimension, str, Bools]]:
    """Every breakdown (dimension, value, episode mask), overall first."""
    yield "overall", "all", np.ones(len(frame), dtype=bool)
    for value in _ordered(frame.suite, SUITE_ORDER):
        yield "suite", value, frame.suite == value
    for value in _ordered(frame.category):
        yield "category", value, frame.category == value
    for value in _ordered(frame.difficulty, tuple(DIFFICULTY_WEIGHT)):
        yield "difficulty", value, frame.difficulty == value
    for value in sorted(frame.traps):
        yield "trap_class", value, frame.traps[value]


def _ratio(num: Floats, den: Floats) -> Floats:
    with np.errstate(invalid="ignore", divide="ignore"):
        out: Floats = num / den
    return out


class _Ratios:
    """Ratio statistics sum(num) / sum(den) over tasks, bootstrapped together.

    Each statistic is a pair of per-task columns over the union of the tasks of one
    breakdown value; a single resample of that union serves every arm's statistics and
    every paired delta (tasks an arm did not run have den = 0).
    """

    def __init__(self, tasks: int) -> None:
        self.tasks = tasks
        self.columns: list[Floats] = []

    def spread(self, positions: np.ndarray, values: Floats) -> Floats:
        """Per-task values placed at their union positions (0 elsewhere)."""
        out = np.zeros(self.tasks)
        out[positions] = values
        return out

    def add(self, num: Floats, den: Floats) -> int:
        """Register a statistic; returns its handle."""
        self.columns += [num, den]
        return len(self.columns) // 2 - 1

    def solve(self, label: str, boot: _Bootstrap) -> list[Interval]:
        """Point estimates and percentile CIs of every registered statistic."""
        values = np.column_stack(self.columns)
        totals = values.sum(axis=0)
        points = [
            float(totals[2 * i] / totals[2 * i + 1]) if totals[2 * i + 1] > 0 else None
            for i in range(len(self.columns) // 2)
        ]
        if boot.resamples <= 0:
            return [Interval(estimate=p) for p in points]
        sums = resampled_sums(values, boot.resamples, group_rng(boot.seed, label))
        ratios = _ratio(sums[:, 0::2], sums[:, 1::2])
        alpha = (1.0 - boot.confidence) / 2.0
        low, high = column_quantiles(ratios, (alpha, 1.0 - alpha))
        return [
            Interval(estimate=p, low=float(lo), high=float(hi))
            if p is not None and np.isfinite(lo)
            else Interval(estimate=p)
            for p, lo, hi in zip(points, low, high, strict=True)
        ]


@dataclass(frozen=True)
class _Bootstrap:
    seed: int
    resamples: int
    confidence: float


def _pass_hat(est: _Estimators, table: TaskTable, j: int) -> Floats:
    return est.hat[j][table.n, table.c]


def _group(
    frame: EpisodeFrame,
    arm: str,
    dimension: Dimension,
    value: str,
    mask: Bools,
    table: TaskTable,
    est: _Estimators,
    intervals: tuple[Interval, Interval, Interval],
) -> GroupStats:
    ph = _pass_hat(est, table, est.k)
    at = est.at[table.n, table.c]
    curve = {}
    for j in range(1, est.k + 1):
        vals = _pass_hat(est, table, j)
        if np.isfinite(vals).any():
            curve[str(j)] = float(np.nanmean(vals))
    acc_i, score_i, ph_i = intervals
    return GroupStats(
        arm=arm,
        dimension=dimension,
        value=value,
        n_tasks=int(table.task.size),
        n_episodes=int(table.n.sum()),
        n_excluded=int((mask & ~frame.graded).sum()),
        accuracy=acc_i,
        pass_hat_k=ph_i,
        pass_hat_k_tasks=int(np.isfinite(ph).sum()),
        pass_at_k=float(np.nanmean(at)) if np.isfinite(at).any() else None,
        pass_hat_curve=curve,
        score=score_i,
        efficiency=efficiency(frame, mask, table),
        consistency=consistency(frame, mask),
        failures=failure_counts(frame, mask),
    )


def _breakdown(
    frame: EpisodeFrame,
    dimension: Dimension,
    value: str,
    dim_mask: Bools,
    baseline: str,
    est: _Estimators,
    boot: _Bootstrap,
) -> tuple[list[GroupStats], list[Delta]]:
    """Every arm's statistics and every delta for one breakdown value."""
    masks: dict[str, Bools] = {}
    tables: dict[str, TaskTable] = {}
    for code, arm in enumerate(frame.arms):
        mask = dim_mask & (frame.arm == code)
        if mask.any():
            masks[arm], tables[arm] = mask, task_table(frame, mask)
    if not tables:
        return [], []
    union = np.unique(np.concatenate([t.task for t in tables.values()]))
    ratios = _Ratios(union.size)
    cols: dict[str, tuple[Floats, Floats, Floats, Floats, Floats]] = {}
    handles: dict[str, tuple[int, int, int]] = {}
    for arm, table in tables.items():
        pos = np.searchsorted(union, table.task)
        ph = _pass_hat(est, table, est.k)
        valid = np.isfinite(ph)
        has = ratios.spread(pos, np.ones(table.task.size))
        acc = ratios.spread(pos, table.accuracy)
        score = ratios.spread(pos, table.score)
        ph_ok = ratios.spread(pos, valid.astype(float))
        ph0 = ratios.spread(pos, np.where(valid, ph, 0.0))
        cols[arm] = (has, acc, score, ph_ok, ph0)
        handles[arm] = (ratios.add(acc, has), ratios.add(score, has), ratios.add(ph0, ph_ok))
    delta_handles: dict[str, tuple[int, int, int, int]] = {}
    if baseline in tables:
        b_has, b_acc, b_score, b_ok, b_ph = cols[baseline]
        for arm in tables:
            if arm == baseline:
                continue
            has, acc, score, ph_ok, ph0 = cols[arm]
            shared, both = has * b_has, ph_ok * b_ok
            delta_handles[arm] = (
                ratios.add((acc - b_acc) * shared, shared),
                ratios.add((score - b_score) * shared, shared),
                ratios.add((ph0 - b_ph) * both, both),
                int(shared.sum()),
            )
    intervals = ratios.solve(f"{dimension}|{value}", boot)
    groups = [
        _group(
            frame,
            arm,
            dimension,
            value,
            masks[arm],
            tables[arm],
            est,
            (intervals[h[0]], intervals[h[1]], intervals[h[2]]),
        )
        for arm, h in handles.items()
    ]
    deltas = [
        Delta(
            arm=arm,
            baseline=baseline,
            dimension=dimension,
            value=value,
            n_shared_tasks=d[3],
            accuracy=intervals[d[0]],
            pass_hat_k=intervals[d[2]],
            score=intervals[d[1]],
        )
        for arm, d in delta_handles.items()
    ]
    return groups, deltas


def _summary(run: RunData, frame: EpisodeFrame, arm: str, group: GroupStats) -> ArmSummary:
    code = frame.arms.index(arm)
    mask = frame.arm == code
    live = mask & ~frame.harness
    n_live = int(live.sum())
    completion = float(frame.completed[live].mean()) if n_live else None
    graded = mask & frame.graded
    score_means = {
        name: float(np.nanmean(col[graded]))
        for name, col in sorted(frame.scores.items())
        if np.isfinite(col[graded]).any()
    }
    timeouts = int((live & (frame.status == "timeout")).sum())
    errored = int((live & (frame.errors > 0)).sum())
    spec = next((a for a in run.manifest.arms if a.get("name") == arm), {})
    raw_agent = spec.get("agent")
    agent: dict[str, Any] = raw_agent if isinstance(raw_agent, dict) else {}
    target = spec.get("target")
    target_text = (
        f"{target.get('kind', '')}:{target.get('profile', '')}".strip(":")
        if isinstance(target, dict)
        else str(target or "")
    )
    first = next((ep for ep, m in zip(frame.episodes, mask, strict=True) if m), None)
    return ArmSummary(
        arm=arm,
        # the target's own label (``reference:a2-embedding``, ``kibana:<agent>``) reads better
        # than the manifest's ``kind:profile`` (a profile may be a long path)
        target=(first.target if first else "") or target_text,
        agent=str(agent.get("kind", "")) or (first.agent if first else ""),
        provider=agent.get("provider") or (first.provider if first else None),
        model=agent.get("model") or (first.model if first else None),
        episodes=int(mask.sum()),
        excluded=int((mask & ~frame.graded).sum()),
        completion_rate=completion,
        reliability=reliability(completion, group.consistency, group.efficiency.tool_exec_rate),
        adjusted_overall=arm_adjusted_overall(
            frame.score[graded], frame.difficulty[graded], frame.status[graded]
        ),
        score_means=score_means,
        badges={
            "timeouts": timeouts,
            "tool_mismatches": int((live & frame.tool_mismatch).sum()),
            "errors": errored,
            "harness_errors": int((mask & frame.harness).sum()),
        },
    )


def compute_stats(
    run: RunData,
    *,
    baseline_arm: str | None = None,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    frame: EpisodeFrame | None = None,
) -> RunStats:
    """All statistics of a run (``resamples=0`` skips the bootstrap: point estimates only)."""
    frame = frame if frame is not None else build_frame(run)
    arms = frame.arms
    if not arms:
        raise UserInputError(f"{run.run_dir}: the run has no arms and no episodes")
    baseline = baseline_arm or arms[0]
    if baseline not in arms:
        raise UserInputError(
            f"--baseline-arm {baseline!r} is not an arm of this run (arms: {', '.join(arms)})"
        )
    k = max(1, run.manifest.k)
    attempts = np.bincount(frame.arm * len(frame.task_ids) + frame.task) if len(frame) else None
    max_n = int(attempts.max()) if attempts is not None else 1
    est = _Estimators(k, max_n)
    boot = _Bootstrap(seed, resamples, confidence)
    groups: list[GroupStats] = []
    deltas: list[Delta] = []
    for dimension, value, dim_mask in dimension_values(frame):
        found, paired = _breakdown(frame, dimension, value, dim_mask, baseline, est, boot)
        groups += found
        deltas += paired
    overall = {g.arm: g for g in groups if g.dimension == "overall"}
    summaries = [_summary(run, frame, arm, overall[arm]) for arm in arms if arm in overall]
    result = RunStats(
        run_id=run.manifest.run_id,
        seed=seed,
        resamples=resamples,
        confidence=confidence,
        k=k,
        baseline_arm=baseline,
        arms=arms,
        world_hash=run.manifest.world_hash,
        task_set_hash=run.manifest.task_set_hash,
        groups=groups,
        deltas=deltas,
        summaries=summaries,
        funnel=lifecycle_funnel(frame),
        lifecycle=arm_lifecycle(frame, run.tasks, k),
        discrimination=task_discrimination([frame]),
    )
    result.caveats = run_caveats(run, frame, result)
    return result
