"""``compute_stats``: every statistic of a run, per arm and breakdown, with bootstrap CIs."""

from __future__ import annotations

from collections.abc import Iterator
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
    group_rng,
    percentile_interval,
    resampled_sums,
)
from dabench.stats.caveats import run_caveats
from dabench.stats.estimators import estimator_table
from dabench.stats.frame import Bools, EpisodeFrame, Floats, build_frame
from dabench.stats.funnel import lifecycle_funnel
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

SUITE_ORDER = ("s1", "s2", "s3", "s4", "s5")


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


def _interval(point: float | None, samples: Floats | None, confidence: float) -> Interval:
    if point is None or not np.isfinite(point):
        return Interval()
    if samples is None:
        return Interval(estimate=point)
    low, high = percentile_interval(samples, confidence)
    return Interval(estimate=point, low=low, high=high)


def _ratio(num: Floats, den: Floats) -> Floats:
    with np.errstate(invalid="ignore", divide="ignore"):
        out: Floats = num / den
    return out


class _Bootstrapper:
    """Point estimates and CIs of (accuracy, score, pass^k) from per-task columns."""

    def __init__(self, seed: int, resamples: int, confidence: float) -> None:
        self.seed = seed
        self.resamples = resamples
        self.confidence = confidence

    def intervals(
        self, label: str, acc: Floats, score: Floats, ph: Floats
    ) -> tuple[Interval, Interval, Interval]:
        valid = np.isfinite(ph)
        t = acc.size
        points = (
            float(acc.mean()) if t else None,
            float(score.mean()) if t else None,
            float(ph[valid].mean()) if valid.any() else None,
        )
        if self.resamples <= 0 or t == 0:
            return tuple(_interval(p, None, self.confidence) for p in points)  # type: ignore[return-value]
        values = np.column_stack([acc, score, np.where(valid, ph, 0.0), valid.astype(float)])
        sums = resampled_sums(values, self.resamples, group_rng(self.seed, label))
        return (
            _interval(points[0], sums[:, 0] / t, self.confidence),
            _interval(points[1], sums[:, 1] / t, self.confidence),
            _interval(points[2], _ratio(sums[:, 2], sums[:, 3]), self.confidence),
        )


def _pass_hat(est: _Estimators, table: TaskTable, j: int) -> Floats:
    return est.hat[j][table.n, table.c]


def _group(
    frame: EpisodeFrame,
    arm: str,
    dimension: Dimension,
    value: str,
    mask: Bools,
    est: _Estimators,
    boot: _Bootstrapper,
) -> tuple[GroupStats, TaskTable]:
    table = task_table(frame, mask)
    ph = _pass_hat(est, table, est.k)
    acc_i, score_i, ph_i = boot.intervals(
        f"group|{arm}|{dimension}|{value}", table.accuracy, table.score, ph
    )
    at = est.at[table.n, table.c]
    curve = {}
    for j in range(1, est.k + 1):
        vals = _pass_hat(est, table, j)
        if np.isfinite(vals).any():
            curve[str(j)] = float(np.nanmean(vals))
    stats = GroupStats(
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
    return stats, table


def _delta(
    arm: str,
    baseline: str,
    dimension: Dimension,
    value: str,
    mine: TaskTable,
    base: TaskTable,
    est: _Estimators,
    boot: _Bootstrapper,
) -> Delta:
    _, ia, ib = np.intersect1d(mine.task, base.task, assume_unique=True, return_indices=True)
    d_acc = mine.accuracy[ia] - base.accuracy[ib]
    d_score = mine.score[ia] - base.score[ib]
    d_ph = _pass_hat(est, mine, est.k)[ia] - _pass_hat(est, base, est.k)[ib]
    acc_i, score_i, ph_i = boot.intervals(
        f"delta|{arm}|{baseline}|{dimension}|{value}", d_acc, d_score, d_ph
    )
    return Delta(
        arm=arm,
        baseline=baseline,
        dimension=dimension,
        value=value,
        n_shared_tasks=int(ia.size),
        accuracy=acc_i,
        pass_hat_k=ph_i,
        score=score_i,
    )


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
        target=target_text or (first.target if first else ""),
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
    boot = _Bootstrapper(seed, resamples, confidence)
    groups: list[GroupStats] = []
    deltas: list[Delta] = []
    for dimension, value, dim_mask in dimension_values(frame):
        tables: dict[str, TaskTable] = {}
        for code, arm in enumerate(arms):
            mask = dim_mask & (frame.arm == code)
            if not mask.any():
                continue
            stats, tables[arm] = _group(frame, arm, dimension, value, mask, est, boot)
            groups.append(stats)
        if baseline in tables:
            for arm, table in tables.items():
                if arm != baseline:
                    deltas.append(
                        _delta(arm, baseline, dimension, value, table, tables[baseline], est, boot)
                    )
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
    )
    result.caveats = run_caveats(run, frame, result)
    return result
