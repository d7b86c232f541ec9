"""Deterministic graders and per-episode scores.

Public API::

    grade_episode(episode, task, truth, *, judge=None, score_config=None, warehouse=None) -> Grade
    agrade_episode(...)                       # the same, async (use it inside an event loop)
    grade_run(run_dir, *, tasks=None, lock=None, judge=None, world=None) -> list[Grade]
    agrade_run(...)

Score formulas (per episode, and the arm-level ``failure_penalty`` / ``adjusted_overall``
that statistics apply) live in :mod:`dabench.grading.scores`; see docs/grading.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dabench.lazy import lazy_exports

if TYPE_CHECKING:
    from dabench.grading.entity import check_entity
    from dabench.grading.episode import agrade_episode, grade_episode, grade_protocol_episode
    from dabench.grading.exec_sql import check_exec_sql, compare_results, predicted_sql
    from dabench.grading.formats import check_format
    from dabench.grading.numeric import check_numeric
    from dabench.grading.refusal import check_refusal
    from dabench.grading.run import agrade_run, grade_run
    from dabench.grading.scores import (
        DEFAULT_WEIGHTS,
        FAILURE_STATUSES,
        ScoreConfig,
        adjusted_overall,
        difficulty_weighted_mean,
        failure_penalty,
    )
    from dabench.grading.tools import check_tool_overlap, error_rate_score

__getattr__ = lazy_exports(
    __name__,
    {
        "dabench.grading.entity": [
            "check_entity",
        ],
        "dabench.grading.episode": [
            "agrade_episode",
            "grade_episode",
            "grade_protocol_episode",
        ],
        "dabench.grading.exec_sql": [
            "check_exec_sql",
            "compare_results",
            "predicted_sql",
        ],
        "dabench.grading.formats": [
            "check_format",
        ],
        "dabench.grading.numeric": [
            "check_numeric",
        ],
        "dabench.grading.refusal": [
            "check_refusal",
        ],
        "dabench.grading.run": [
            "agrade_run",
            "grade_run",
        ],
        "dabench.grading.scores": [
            "DEFAULT_WEIGHTS",
            "FAILURE_STATUSES",
            "ScoreConfig",
            "adjusted_overall",
            "difficulty_weighted_mean",
            "failure_penalty",
        ],
        "dabench.grading.tools": [
            "check_tool_overlap",
            "error_rate_score",
        ],
    },
)

__all__ = [
    "DEFAULT_WEIGHTS",
    "FAILURE_STATUSES",
    "ScoreConfig",
    "adjusted_overall",
    "agrade_episode",
    "agrade_run",
    "check_entity",
    "check_exec_sql",
    "check_format",
    "check_numeric",
    "check_refusal",
    "check_tool_overlap",
    "compare_results",
    "difficulty_weighted_mean",
    "error_rate_score",
    "failure_penalty",
    "grade_episode",
    "grade_protocol_episode",
    "grade_run",
    "predicted_sql",
]
