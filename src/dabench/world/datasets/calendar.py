"""Helper tables that spread facts over days and hours with growth and seasonality."""

from __future__ import annotations

from dabench.world.constants import COLLECTOR_GAP, END_DATE, START_DATE
from dabench.world.datasets.spec import Helper
from dabench.world.sqlrand import Rand

SEASON = [0.45, 0.6, 0.8, 1.05, 1.15, 1.3, 1.4, 1.1, 0.9, 0.85, 1.2, 1.5]
"""Monthly demand factor of an outdoor-gear retailer (January trough, December peak)."""

LOCAL_HOUR_WEIGHTS = [
    0.2, 0.1, 0.1, 0.1, 0.1, 0.2, 0.4, 0.7, 1.0, 1.1, 1.2, 1.3,
    1.4, 1.3, 1.2, 1.2, 1.3, 1.5, 1.9, 2.3, 2.5, 2.2, 1.4, 0.6,
]  # fmt: skip
"""Share of web activity per local hour: evenings are busiest."""

N_DAYS = (END_DATE - START_DATE).days + 1


def days_helper(name: str, rand: Rand, *, skip_gap: bool = False) -> Helper:
    """``name(day, weight, cum_start, cum_end)``: a day's share of activity as a quantile range."""
    season = "[" + ", ".join(repr(x) for x in SEASON) + "]"
    gap = f"CASE WHEN day = DATE '{COLLECTOR_GAP}' THEN 0 ELSE 1 END * " if skip_gap else ""
    select = f"""
WITH d AS (
  SELECT DATE '{START_DATE}' + i::INTEGER AS day, i FROM range({N_DAYS}) t(i)
), w AS (
  SELECT day, {gap}(1 + 0.35 * i / 365.0) * {season}[month(day)]
         * (0.85 + 0.3 * {rand.u(name, "i")}) AS weight
  FROM d
)
SELECT day, weight,
       (sum(weight) OVER (ORDER BY day ROWS UNBOUNDED PRECEDING) - weight)
         / sum(weight) OVER () AS cum_start,
       sum(weight) OVER (ORDER BY day ROWS UNBOUNDED PRECEDING)
         / sum(weight) OVER () AS cum_end
FROM w ORDER BY day"""
    return Helper(name, select)


def local_hour(rand: Rand, tag: str, key: str) -> str:
    """An INTEGER local hour of day drawn from :data:`LOCAL_HOUR_WEIGHTS`."""
    items = [(str(h), w) for h, w in enumerate(LOCAL_HOUR_WEIGHTS)]
    return f"{rand.weighted(tag, key, items)}::INTEGER"


def quantile_days(helper: str, n: str, key: str = "i", keys: tuple[int, int] | None = None) -> str:
    """``SELECT {key}, day`` for keys 0..n-1 spread over days by the helper's weights.

    Keys are assigned to days in order, so key order is time order. ``keys`` = (lo, hi)
    yields only the keys lo..hi-1 (with the same days), generating no other key.
    """
    start, end = f"round(cum_start * {n})::BIGINT", f"round(cum_end * {n})::BIGINT"
    if keys is not None:
        lo, hi = keys
        start, end = f"greatest({start}, {lo})", f"least({end}, {hi})"
    return f"SELECT unnest(range({start}, {end})) AS {key}, day FROM {helper}"
