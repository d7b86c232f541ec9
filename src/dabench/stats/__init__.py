"""Statistics of a run: accuracy, pass^k / pass@k, bootstrap CIs, paired deltas, efficiency.

Pure numpy and seeded: the same run directory and seed give a byte-identical ``stats.json``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dabench.lazy import lazy_exports

if TYPE_CHECKING:
    from dabench.stats.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
    from dabench.stats.compute import compute_stats
    from dabench.stats.estimators import pass_at_k, pass_hat_k
    from dabench.stats.frame import EpisodeFrame, build_frame
    from dabench.stats.io import STATS_FILE, read_stats, write_stats
    from dabench.stats.model import RunStats
    from dabench.stats.rundir import RunData, TaskInfo, load_run

__getattr__ = lazy_exports(
    __name__,
    {
        "dabench.stats.bootstrap": [
            "DEFAULT_RESAMPLES",
            "DEFAULT_SEED",
        ],
        "dabench.stats.compute": [
            "compute_stats",
        ],
        "dabench.stats.estimators": [
            "pass_at_k",
            "pass_hat_k",
        ],
        "dabench.stats.frame": [
            "EpisodeFrame",
            "build_frame",
        ],
        "dabench.stats.io": [
            "STATS_FILE",
            "read_stats",
            "write_stats",
        ],
        "dabench.stats.model": [
            "RunStats",
        ],
        "dabench.stats.rundir": [
            "RunData",
            "TaskInfo",
            "load_run",
        ],
    },
)

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "STATS_FILE",
    "EpisodeFrame",
    "RunData",
    "RunStats",
    "TaskInfo",
    "build_frame",
    "compute_stats",
    "load_run",
    "pass_at_k",
    "pass_hat_k",
    "read_stats",
    "write_stats",
]
