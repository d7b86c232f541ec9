"""S5 lifecycle metrics: capture, recall, surfacing, promotion, transfer, update, duplicate and
abstention rates, and pass^k per protocol.

Pure computations over journaled episodes: each protocol step's verdict
(:class:`~dabench.journal.records.StepRecord` ``passed``) counts toward the metric its protocol
step is tagged with (``ProtocolStep.metric``). The runner's ``dabench tasks validate`` and the
run statistics (``stats.json``) share :func:`metric_counts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

from dabench.journal.records import Episode
from dabench.stats.estimators import estimator_table
from dabench.stats.frame import EpisodeFrame, WithSteps
from dabench.stats.model import ArmLifecycle, LifecycleRate, ProtocolPassK
from dabench.stats.rundir import TaskInfo
from dabench.tasks.model import Protocol

LIFECYCLE_METRICS: tuple[str, ...] = (
    "capture",
    "recall",
    "surfacing",
    "promotion",
    "transfer",
    "update",
    "duplicate",
    "abstention",
)
"""The S5 metrics in report order; each is the pass rate of the protocol steps tagged with it,
except ``duplicate``: the duplicate *rate* (the share of duplicate checks that failed)."""

StepMetrics = Mapping[str, Mapping[str, str]]
"""Per protocol id: step name -> the lifecycle metric its verdict counts toward."""


def protocol_step_metrics(protocols: Iterable[Protocol]) -> dict[str, dict[str, str]]:
    """The step -> metric map of each protocol (untagged steps left out)."""
    return {p.id: {s.name: s.metric for s in p.steps if s.metric} for p in protocols}


def metric_counts(
    episodes: Iterable[WithSteps], step_metrics: StepMetrics
) -> dict[str, LifecycleRate]:
    """Per lifecycle metric with at least one verdict: the counted steps and the rate.

    Only episodes of protocols in ``step_metrics`` count; harness errors and steps without a
    verdict (an ungraded teach episode) are left out. ``count`` is the rate's numerator:
    passed steps, or for ``duplicate`` the failed duplicate checks.
    """
    counts: dict[str, list[int]] = {m: [0, 0] for m in LIFECYCLE_METRICS}
    for ep in episodes:
        tags = step_metrics.get(ep.task_id)
        if tags is None or ep.status == "harness_error":
            continue
        for record in ep.steps:
            tag = tags.get(record.name)
            if tag is None or record.passed is None:
                continue
            slot = counts.setdefault(tag, [0, 0])
            slot[0] += int(record.passed)
            slot[1] += 1
    out: dict[str, LifecycleRate] = {}
    for metric, (passed, n) in counts.items():
        if n == 0:
            continue
        count = n - passed if metric == "duplicate" else passed
        out[metric] = LifecycleRate(metric=metric, count=count, n=n, rate=count / n)
    return out


def lifecycle_metrics(
    episodes: Iterable[Episode], protocols: Mapping[str, Protocol]
) -> dict[str, dict[str, float | int]]:
    """Per lifecycle metric: ``{"passed", "total", "rate"}`` (``passed`` is the numerator:
    failed checks for ``duplicate``); the form ``dabench tasks validate`` prints."""
    counted = metric_counts(episodes, protocol_step_metrics(protocols.values()))
    return {
        m: {"passed": r.count, "total": r.n, "rate": round(r.rate or 0.0, 4)}
        for m, r in counted.items()
    }


def task_step_metrics(tasks: Mapping[str, TaskInfo] | None) -> dict[str, dict[str, str]]:
    """The step -> metric maps of the protocols in a run's task snapshot."""
    return {t.id: dict(t.step_metrics) for t in (tasks or {}).values() if t.step_metrics}


def _protocol_passes(
    frame: EpisodeFrame, has_steps: npt.NDArray[np.bool_], code: int, k: int
) -> list[ProtocolPassK]:
    rows: list[ProtocolPassK] = []
    mask = (frame.arm == code) & frame.graded & has_steps
    tasks = frame.task[mask]
    attempts = np.bincount(tasks, minlength=len(frame.task_ids))
    passes = np.bincount(tasks, weights=frame.passed[mask], minlength=len(frame.task_ids))
    max_n = max(int(attempts.max(initial=0)), k)
    hat, at = estimator_table(max_n, k), estimator_table(max_n, k, at=True)
    for task_code in np.flatnonzero(attempts):
        n, c = int(attempts[task_code]), int(passes[task_code])
        rows.append(
            ProtocolPassK(
                protocol=frame.task_ids[task_code],
                attempts=n,
                passed=c,
                pass_hat_k=float(hat[n, c]) if n >= k else None,
                pass_at_k=float(at[n, c]) if n >= k else None,
            )
        )
    rows.sort(key=lambda r: r.protocol)
    return rows


def arm_lifecycle(
    frame: EpisodeFrame, tasks: Mapping[str, TaskInfo] | None, k: int
) -> dict[str, ArmLifecycle]:
    """Per arm with protocol episodes: the lifecycle rates and pass^k per protocol."""
    step_metrics = task_step_metrics(tasks)
    has_steps = np.fromiter((bool(ep.steps) for ep in frame.episodes), bool, len(frame))
    out: dict[str, ArmLifecycle] = {}
    for code, arm in enumerate(frame.arms):
        episodes = [
            ep
            for ep, a, harness in zip(frame.episodes, frame.arm, frame.harness, strict=True)
            if a == code and ep.steps and not harness
        ]
        protocols = _protocol_passes(frame, has_steps, code, k)
        if not episodes and not protocols:
            continue
        rates = metric_counts(episodes, step_metrics)
        measured = [p.pass_hat_k for p in protocols if p.pass_hat_k is not None]
        out[arm] = ArmLifecycle(
            k=k,
            metrics=[rates[m] for m in LIFECYCLE_METRICS if m in rates]
            + [r for m, r in sorted(rates.items()) if m not in LIFECYCLE_METRICS],
            protocols=protocols,
            pass_hat_k=sum(measured) / len(measured) if measured else None,
        )
    return out
