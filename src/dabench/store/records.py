"""The records a results store holds: one per run, per episode and per (arm, breakdown)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RunRecord(_Row):
    """One published run: what its manifest pins."""

    run_id: str
    name: str
    """The experiment's name."""
    started_at: datetime
    finished_at: datetime | None
    k: int
    tasks: int
    task_set_hash: str
    world_hash: str
    world_seed: int
    dabench_version: str
    git_commit: str | None
    judge_model: str | None
    run_dir: str
    manifest: dict[str, Any]
    """The whole manifest, as written."""


class EpisodeRecord(_Row):
    """One episode with its grade; keyed by (run, arm, task, attempt)."""

    run_id: str
    arm: str
    task_id: str
    attempt: int
    suite: str
    category: str
    difficulty: str
    status: str
    agent: str
    provider: str | None
    model: str | None
    target: str
    tool_calls: int
    tokens: int | None
    """``None`` when the episode's usage was not reported (unknown, never 0)."""
    cost_usd: float | None
    wall_ms: float
    passed: bool | None
    """``None`` when the episode was not graded."""
    score: float | None
    excluded: bool
    """Harness errors: left out of accuracy, as in the run's own statistics."""
    started_at: datetime


class ArmStatRecord(_Row):
    """The statistics of one arm over one breakdown value of one run (``overall`` / ``all``,
    or per suite); keyed by (run, arm, dimension, value)."""

    run_id: str
    arm: str
    dimension: str
    value: str
    started_at: datetime
    """When the run started (the time axis of trends)."""
    agent: str | None
    model: str | None
    target: str | None
    k: int
    n_tasks: int
    n_episodes: int
    n_excluded: int
    accuracy: float | None
    accuracy_low: float | None
    accuracy_high: float | None
    pass_hat_k: float | None
    pass_hat_k_low: float | None
    pass_hat_k_high: float | None
    score: float | None
    tool_calls_median: float | None
    tokens_mean: float | None
    cost_total_usd: float | None


class StoredRun(_Row):
    """Everything one run publishes."""

    run: RunRecord
    episodes: list[EpisodeRecord]
    arm_stats: list[ArmStatRecord]
