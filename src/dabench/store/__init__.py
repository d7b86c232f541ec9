"""The results store: runs published into one database so that they can be compared over time.

``dabench publish RUN... --store duckdb:PATH`` (the default store is a local DuckDB file) or
``--elasticsearch URL`` writes each run's manifest, episodes with their grades, and per-arm
statistics; ``dabench history --store ...`` answers across the published runs.
"""

from dabench.store.collect import collect_run
from dabench.store.records import ArmStatRecord, EpisodeRecord, RunRecord, StoredRun
from dabench.store.trend import TrendPoint, TrendSeries, sparkline, trends

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
