"""The results store: runs published into one database so that they can be compared over time.

``dabench publish RUN... --store duckdb:PATH`` (the default store is a local DuckDB file) or
``--elasticsearch URL`` writes each run's manifest, episodes with their grades, and per-arm
statistics; ``dabench history --store ...`` answers across the published runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dabench.lazy import lazy_exports

if TYPE_CHECKING:
    from dabench.store.collect import collect_run
    from dabench.store.records import ArmStatRecord, EpisodeRecord, RunRecord, StoredRun
    from dabench.store.trend import TrendPoint, TrendSeries, sparkline, trends

__getattr__ = lazy_exports(
    __name__,
    {
        "dabench.store.collect": [
            "collect_run",
        ],
        "dabench.store.records": [
            "ArmStatRecord",
            "EpisodeRecord",
            "RunRecord",
            "StoredRun",
        ],
        "dabench.store.trend": [
            "TrendPoint",
            "TrendSeries",
            "sparkline",
            "trends",
        ],
    },
)

__all__ = [
    "ArmStatRecord",
    "EpisodeRecord",
    "RunRecord",
    "StoredRun",
    "TrendPoint",
    "TrendSeries",
    "collect_run",
    "sparkline",
    "trends",
]
