"""The seed-003 aggregate: a difficulty-weighted overall score with a failure penalty.

The definition lives in :mod:`dabench.grading.scores` (``adjusted_overall``,
``failure_penalty``, ``FAILURE_STATUSES``); this module feeds it an arm's episodes.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dabench.grading.scores import FAILURE_STATUSES
from dabench.grading.scores import adjusted_overall as _adjusted_overall
from dabench.tasks.model import DIFFICULTY_WEIGHT


def arm_adjusted_overall(
    overall: npt.NDArray[np.float64],
    difficulties: npt.NDArray[np.str_],
    statuses: npt.NDArray[np.str_],
) -> float | None:
    """Adjusted overall of an arm's graded, non-excluded episodes (``None`` when empty).

    Unknown difficulty labels weigh as ``medium``.
    """
    if overall.size == 0:
        return None
    items = [
        (float(s), d if d in DIFFICULTY_WEIGHT else "medium")
        for s, d in zip(overall.tolist(), difficulties.tolist(), strict=True)
    ]
    failures = int(np.isin(statuses, list(FAILURE_STATUSES)).sum())
    return _adjusted_overall(items, failures, int(overall.size))
