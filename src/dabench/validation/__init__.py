"""Task validation: every task's gold, grader and naive answer proved end to end.

This layer sits above runner, agents, grading and stats: :func:`validate` plays the oracle
through the real runner on real platform processes and grades the run. ``dabench tasks
validate`` is its command (:mod:`dabench.validation.commands`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dabench.lazy import lazy_exports

if TYPE_CHECKING:
    from dabench.validation.tasks import ValidationReport, default_world, render_report, validate

__getattr__ = lazy_exports(
    __name__,
    {
        "dabench.validation.tasks": [
            "ValidationReport",
            "default_world",
            "render_report",
            "validate",
        ],
    },
)

__all__ = ["ValidationReport", "default_world", "render_report", "validate"]
