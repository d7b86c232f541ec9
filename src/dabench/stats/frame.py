"""A columnar view of a run: one numpy array per per-episode quantity.

Built once from :class:`~dabench.stats.rundir.RunData`; every statistic is then a masked,
vectorised reduction over these arrays, which keeps 100,000 episodes fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dabench.grading.tool_equivalents import (
    manifest_offered_tools,
    manifest_roles,
    met_expected_tools,
    offered_expected_tools,
)
from dabench.journal.records import Episode, RunManifest
from dabench.stats.rundir import RunData, TaskInfo
from dabench.stats.taxonomy import classify_failure, episode_calls, tool_trace

Bools = npt.NDArray[np.bool_]
Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Strs = npt.NDArray[np.str_]

TIMEOUT_KEYS = ("episode_timeout_s", "timeout_s", "episode_time_limit_s")
"""Setting names searched (arm first, then experiment) for the episode time limit."""


def _find_number(obj: Any, keys: tuple[str, ...]) -> float | None:
    if isinstance(obj, dict):
        for key in keys:
            value = obj.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
        for value in obj.values():
            found = _find_number(value, keys)
            if found is not None:
                return found
    return None


def timeout_limits(manifest: RunManifest) -> dict[str, float]:
    """Per arm, the episode time limit in seconds when the manifest records one."""
    default = _find_number(manifest.experiment, TIMEOUT_KEYS)
    limits: dict[str, float] = {}
    for arm in manifest.arms:
        value = _find_number(arm, TIMEOUT_KEYS)
        if value is None:
            value = default
        if value is not None:
            limits[str(arm.get("name", ""))] = value
    return limits


@dataclass
class EpisodeFrame:
    """Per-episode arrays of one run (index i is the i-th episode of the journal)."""

    episodes: list[Episode]
    arms: list[str]
    task_ids: list[str]
    arm: Ints
    task: Ints
    suite: Strs
    category: Strs
    difficulty: Strs
    status: Strs
    failure: Strs
    graded: Bools
    """Graded and not excluded: counts in accuracy."""
    harness: Bools
    """Harness errors (excluded from accuracy)."""
    passed: Bools
    score: Floats
    """Per-episode overall score (``scores['overall']``, else the grade's score)."""
    calls: Ints
    errors: Ints
    retries: Ints
    tool_expected: Bools
    tool_mismatch: Bools
    fast_path_task: Bools
    fast_path_used: Bools
    wall_s: Floats
    wall_capped_s: Floats
    """Wall clock with timeouts counted at the episode time limit (when known)."""
    tokens: Floats
    """Tokens of the episode; NaN where its usage is unknown (a round did not report it)."""
    enrichment: Ints
    cost: Floats
    """NaN where the episode has no cost."""
    completed: Bools
    ttft_ms: Floats
    """Time to first token in ms; NaN where the episode has none (the target does not stream)."""
    ttft_measured: Bools
    """True where the time to first token was measured by dabench (not reported by the target)."""
    scores: dict[str, Floats] = field(default_factory=dict)
    traps: dict[str, Bools] = field(default_factory=dict)
    min_calls: Floats = field(default_factory=lambda: np.zeros(0))
    """Per task code: the fewest tool calls of any passed episode (NaN if none passed)."""

    def __len__(self) -> int:
        return len(self.episodes)


COLUMN_DTYPES: dict[str, Any] = {
    "arm": np.int64,
    "task": np.int64,
    "suite": str,
    "category": str,
    "difficulty": str,
    "status": str,
    "failure": str,
    "graded": bool,
    "harness": bool,
    "passed": bool,
    "score": np.float64,
    "calls": np.int64,
    "errors": np.int64,
    "retries": np.int64,
    "tool_expected": bool,
    "tool_mismatch": bool,
    "fast_path_task": bool,
    "fast_path_used": bool,
    "wall_s": np.float64,
    "wall_capped_s": np.float64,
    "tokens": np.float64,
    "enrichment": np.int64,
    "cost": np.float64,
    "completed": bool,
    "ttft_ms": np.float64,
    "ttft_measured": bool,
}
"""The per-episode columns of an :class:`EpisodeFrame` and their NumPy dtypes."""


def build_frame(run: RunData) -> EpisodeFrame:
    """Flatten a loaded run into an :class:`EpisodeFrame`."""
    episodes = run.episodes
    arms = run.arm_names
    arm_index = {a: i for i, a in enumerate(arms)}
    task_index: dict[str, int] = {}
    tasks = run.tasks or {}
    limits = timeout_limits(run.manifest)
    n = len(episodes)
    cols: dict[str, list[Any]] = {name: [] for name in COLUMN_DTYPES}
    score_cols: dict[str, Floats] = {}
    trap_cols: dict[str, Bools] = {}
    offered = manifest_offered_tools(run.manifest)
    roles = manifest_roles(run.manifest)
    for i, ep in enumerate(episodes):
        info = tasks.get(ep.task_id) or TaskInfo(id=ep.task_id)
        grade = run.grades.get(ep.key)
        harness = ep.status == "harness_error" or bool(grade and grade.excluded)
        passed: bool | None = None if grade is None else grade.passed
        calls = episode_calls(ep)
        trace = tool_trace(calls, info.fast_path)
        wall = ep.wall_ms / 1000.0
        limit = limits.get(ep.arm)
        cols["arm"].append(arm_index[ep.arm])
        cols["task"].append(task_index.setdefault(ep.task_id, len(task_index)))
        cols["suite"].append(ep.suite)
        cols["category"].append(ep.category)
        cols["difficulty"].append(ep.difficulty)
        cols["status"].append(ep.status)
        cols["failure"].append(classify_failure(ep, passed, harness, trace))
        cols["graded"].append(grade is not None and not harness)
        cols["harness"].append(harness)
        cols["passed"].append(bool(passed) and not harness)
        score = 0.0
        if grade is not None:
            score = float(grade.scores.get("overall", grade.score))
            for name, value in grade.scores.items():
                if name not in score_cols:
                    score_cols[name] = np.full(n, np.nan)
                score_cols[name][i] = value
        cols["score"].append(score)
        cols["calls"].append(trace.calls)
        cols["errors"].append(trace.errors)
        cols["retries"].append(trace.retries)
        arm_roles = roles.get(ep.arm)
        expected = offered_expected_tools(info.expected_tools, offered.get(ep.arm), arm_roles)
        cols["tool_expected"].append(bool(expected))
        cols["tool_mismatch"].append(
            bool(expected) and not met_expected_tools(calls, expected, arm_roles)
        )
        cols["fast_path_task"].append(bool(info.fast_path))
        cols["fast_path_used"].append(trace.fast_path_used)
        cols["wall_s"].append(wall)
        capped = max(wall, limit) if ep.status == "timeout" and limit is not None else wall
        cols["wall_capped_s"].append(capped)
        cols["tokens"].append(ep.usage.total if ep.usage_known else np.nan)
        cols["enrichment"].append(ep.audit.enrichment_tokens_delivered if ep.audit else 0)
        cols["cost"].append(np.nan if ep.cost_usd is None else ep.cost_usd)
        cols["completed"].append(ep.status == "completed")
        cols["ttft_ms"].append(np.nan if ep.ttft_ms is None else ep.ttft_ms)
        cols["ttft_measured"].append(ep.ttft_source == "measured")
        for trap in info.trap_classes:
            if trap not in trap_cols:
                trap_cols[trap] = np.zeros(n, dtype=bool)
            trap_cols[trap][i] = True
    frame = EpisodeFrame(
        episodes=episodes,
        arms=arms,
        task_ids=list(task_index),
        **{name: np.asarray(cols[name], dtype=dtype) for name, dtype in COLUMN_DTYPES.items()},
        scores=score_cols,
        traps=trap_cols,
    )
    frame.min_calls = _min_passed_calls(frame)
    return frame


def _min_passed_calls(frame: EpisodeFrame) -> Floats:
    out = np.full(len(frame.task_ids), np.inf)
    ok = frame.passed & frame.graded
    np.minimum.at(out, frame.task[ok], frame.calls[ok].astype(np.float64))
    out[np.isinf(out)] = np.nan
    return out
