"""The seed-003 aggregate: a difficulty-weighted overall score with a failure penalty.

Kept behind one function so the grading package's definition can replace the fallback.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dabench.tasks.model import DIFFICULTY_WEIGHT

FAILURE_PENALTY_FACTOR = 0.5
"""Fallback: the adjusted overall loses half the failure rate (timeouts and errors)."""


def adjusted_overall(
    overall: npt.NDArray[np.float64],
    difficulties: npt.NDArray[np.str_],
    failures: int,
    episodes: int,
) -> float | None:
    """Difficulty-weighted mean of per-episode overall scores times (1 - failure penalty).

    ``failures`` counts timeouts and errored episodes among ``episodes``.
    """
    if overall.size == 0 or episodes == 0:
        return None
    weights = np.array([DIFFICULTY_WEIGHT.get(str(d), 1.0) for d in difficulties])
    weighted = float(np.sum(overall * weights) / np.sum(weights))
    penalty = FAILURE_PENALTY_FACTOR * failures / episodes
    return weighted * (1.0 - penalty)
