"""Per-group reductions over an :class:`EpisodeFrame`: task tables, efficiency, consistency."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dabench.stats.frame import Bools, EpisodeFrame, Floats, Ints
from dabench.stats.model import FAILURE_CLASSES, Consistency, Efficiency, TtftSources

RELIABILITY_WEIGHTS = (0.5, 0.3, 0.2)
"""Weights of completion rate, consistency and tool execution rate in the reliability score."""
CONSISTENCY_SD_SCALE = 0.5
"""The score standard deviation at which the consistency term of reliability reaches 0."""


@dataclass(frozen=True)
class TaskTable:
    """Per-task aggregates of one group's graded episodes (sorted by task code)."""

    task: Ints
    n: Ints
    c: Ints
    score: Floats
    ves: Floats

    @property
    def accuracy(self) -> Floats:
        """Per-task success rate c / n."""
        return self.c / self.n


def _f(x: float | np.floating | None) -> float | None:
    if x is None:
        return None
    value = float(x)
    return value if np.isfinite(value) else None


def task_table(frame: EpisodeFrame, mask: Bools) -> TaskTable:
    """Aggregate the graded episodes in ``mask`` per task."""
    sel = np.flatnonzero(mask & frame.graded)
    tasks, inv = np.unique(frame.task[sel], return_inverse=True)
    n = np.bincount(inv, minlength=tasks.size).astype(np.int64)
    passed = frame.passed[sel]
    c = np.bincount(inv, weights=passed, minlength=tasks.size).round().astype(np.int64)
    score = np.bincount(inv, weights=frame.score[sel], minlength=tasks.size) / np.maximum(n, 1)
    min_calls = frame.min_calls[frame.task[sel]]
    ratio = np.sqrt((np.nan_to_num(min_calls) + 1.0) / (frame.calls[sel] + 1.0))
    ves_ep = np.where(passed, np.minimum(1.0, ratio), 0.0)
    ves = np.bincount(inv, weights=ves_ep, minlength=tasks.size) / np.maximum(n, 1)
    return TaskTable(tasks, n, c, score, ves)


def _quantile(values: npt.NDArray[np.float64] | Ints, q: float) -> float | None:
    return float(np.quantile(values, q)) if values.size else None


def _quantiles(values: npt.NDArray[np.float64] | Ints) -> tuple[float | None, float | None]:
    """Median and 90th percentile (linear interpolation), ``None`` when empty."""
    if not values.size:
        return None, None
    median, p90 = np.quantile(values, [0.5, 0.9])
    return float(median), float(p90)


def _mean(values: npt.NDArray[np.float64] | Ints) -> float | None:
    return float(np.mean(values)) if values.size else None


def _ttft(
    frame: EpisodeFrame, sel: Bools
) -> tuple[float | None, float | None, int, TtftSources | None]:
    """p50 and p95 of the time to first token over the completed episodes in ``sel`` that
    recorded one, how many did, and where the values come from; ``None`` when none did."""
    has = sel & frame.completed & ~np.isnan(frame.ttft_ms)
    values = frame.ttft_ms[has]
    if not values.size:
        return None, None, 0, None
    measured = frame.ttft_measured[has]
    source: TtftSources = "mixed"
    if measured.all() or not measured.any():
        source = "measured" if measured.all() else "reported"
    p50, p95 = np.quantile(values, [0.5, 0.95])
    return float(p50), float(p95), int(values.size), source


def efficiency(frame: EpisodeFrame, mask: Bools, table: TaskTable) -> Efficiency:
    """Efficiency figures over the non-excluded episodes in ``mask``."""
    sel = mask & ~frame.harness
    calls = frame.calls[sel]
    errors = frame.errors[sel]
    passed = frame.passed[sel]
    wall = frame.wall_s[sel]
    ok = frame.completed[sel]
    tokens_all = frame.tokens[sel]
    usage_known = ~np.isnan(tokens_all)
    tokens = tokens_all[usage_known]
    enrich = frame.enrichment[sel]
    cost = frame.cost[sel]
    score = frame.score[sel]
    fp_task = frame.fast_path_task[sel]
    total_calls = int(calls.sum())
    has_cost = ~np.isnan(cost)
    cost_mean = _mean(cost[has_cost])
    wall_mean = _mean(wall)
    score_mean = _mean(score)
    qpd = None
    if cost_mean and has_cost.any():
        qpd = float(np.mean(score[has_cost])) / cost_mean
    calls_q = _quantiles(calls)
    wall_q = _quantiles(wall)
    ttft_p50, ttft_p95, ttft_n, ttft_source = _ttft(frame, sel)
    known_calls = int(calls[usage_known].sum())
    return Efficiency(
        tool_calls_median=calls_q[0],
        tool_calls_p90=calls_q[1],
        tool_calls_mean=_mean(calls),
        errors_before_success_mean=_mean(errors[passed]),
        errors_before_success_median=_quantile(errors[passed], 0.5),
        wall_s_median=wall_q[0],
        wall_s_p90=wall_q[1],
        latency_ok_s=_mean(wall[ok]),
        latency_all_s=_mean(frame.wall_capped_s[sel]),
        ttft_ms_p50=ttft_p50,
        ttft_ms_p95=ttft_p95,
        ttft_n=ttft_n,
        ttft_source=ttft_source,
        tokens_mean=_mean(tokens),
        tokens_total=int(tokens.sum()),
        tokens_n=int(tokens.size),
        enrichment_tokens_mean=_mean(enrich),
        enrichment_tokens_total=int(enrich.sum()),
        ves=_f(np.mean(table.ves)) if table.task.size else None,
        fast_path_rate=_mean(frame.fast_path_used[sel][fp_task].astype(np.float64)),
        fast_path_episodes=int(frame.fast_path_used[sel][fp_task].sum()),
        tool_exec_rate=1.0 - float(errors.sum()) / total_calls if total_calls else None,
        tokens_per_tool_call=float(tokens.sum()) / known_calls if known_calls else None,
        retries_total=int(frame.retries[sel].sum()),
        retries_mean=_mean(frame.retries[sel]),
        cost_total_usd=float(cost[has_cost].sum()) if has_cost.any() else None,
        cost_mean_usd=cost_mean,
        quality_per_dollar=qpd,
        quality_per_second=score_mean / wall_mean if score_mean is not None and wall_mean else None,
    )


def consistency(frame: EpisodeFrame, mask: Bools) -> Consistency:
    """Spread of overall scores over completed, graded episodes."""
    values = frame.score[mask & frame.graded & frame.completed]
    if values.size == 0:
        return Consistency()
    return Consistency(
        n=int(values.size),
        sd=float(np.std(values, ddof=1)) if values.size > 1 else 0.0,
        min=float(values.min()),
        max=float(values.max()),
        median=float(np.median(values)),
    )


def failure_counts(frame: EpisodeFrame, mask: Bools) -> dict[str, int]:
    """Episodes per failure class (every class present, zeros included)."""
    classes, counts = np.unique(frame.failure[mask], return_counts=True)
    found = dict(zip(classes.tolist(), counts.tolist(), strict=True))
    return {name: int(found.get(name, 0)) for name in FAILURE_CLASSES}


def reliability(
    completion_rate: float | None, spread: Consistency, tool_exec_rate: float | None
) -> float | None:
    """0.5 completion + 0.3 (1 - min(1, sd / 0.5)) + 0.2 tool execution rate."""
    if completion_rate is None:
        return None
    w_done, w_cons, w_exec = RELIABILITY_WEIGHTS
    cons = 0.0 if spread.sd is None else 1.0 - min(1.0, spread.sd / CONSISTENCY_SD_SCALE)
    exec_rate = 1.0 if tool_exec_rate is None else tool_exec_rate
    return w_done * completion_rate + w_cons * cons + w_exec * exec_rate
