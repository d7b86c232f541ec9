"""Number formatting shared by the markdown and HTML reports (registered as jinja filters)."""

from __future__ import annotations

from dabench.stats.model import Efficiency, Interval

NA = "n/a"
"""What every report prints for a metric an arm lacks (never 0)."""


def pct(value: float | None, digits: int = 1) -> str:
    """A 0..1 rate as a percentage, ``n/a`` when unknown."""
    return NA if value is None else f"{100 * value:.{digits}f}%"


def num(value: float | int | None, digits: int = 1) -> str:
    """A number with thousands separators, ``n/a`` when unknown."""
    if value is None:
        return NA
    if isinstance(value, int) or (float(value).is_integer() and abs(value) >= 100):
        return f"{round(value):,}"
    return f"{value:,.{digits}f}"


def usd(value: float | None) -> str:
    """Dollars with enough precision for small per-episode costs."""
    if value is None:
        return NA
    return f"${value:,.4f}" if abs(value) < 1 else f"${value:,.2f}"


def ci(interval: Interval | None) -> str:
    """``42.7% [35.1, 50.2]`` for a rate with its confidence interval."""
    if interval is None or interval.estimate is None:
        return NA
    text = pct(interval.estimate)
    if interval.low is not None and interval.high is not None:
        text += f" [{100 * interval.low:.1f}, {100 * interval.high:.1f}]"
    return text


def signed_points(value: float | None) -> str:
    """A 0..1 difference in percentage points with its sign."""
    return NA if value is None else f"{100 * value:+.1f}"


def delta(interval: Interval | None) -> str:
    """``+56.0 pts [+44.0, +67.0]`` for a paired delta."""
    if interval is None or interval.estimate is None:
        return NA
    text = f"{signed_points(interval.estimate)} pts"
    if interval.low is not None and interval.high is not None:
        text += f" [{signed_points(interval.low)}, {signed_points(interval.high)}]"
    return text


def verdict(interval: Interval | None) -> str:
    """``better`` / ``worse`` when the CI excludes 0, else ``n.s.`` (not significant)."""
    if interval is None or interval.low is None or interval.high is None:
        return NA
    if interval.low > 0:
        return "better"
    if interval.high < 0:
        return "worse"
    return "n.s."


def verdict_words(interval: Interval | None) -> str:
    """A delta's verdict in words: ``better (95% CI above 0)``, ``worse (95% CI below 0)``,
    ``no significant difference (95% CI includes 0)``, ``n/a`` without a CI."""
    v = verdict(interval)
    if v == "better":
        return "better (95% CI above 0)"
    if v == "worse":
        return "worse (95% CI below 0)"
    if v == "n.s.":
        return "no significant difference (95% CI includes 0)"
    return NA


TTFT_SOURCES = {
    "measured": "measured by dabench",
    "reported": "reported by Kibana",
    "mixed": "mixed: measured and reported",
}
"""How each time-to-first-token source is labelled wherever a figure is shown."""


def ttft(efficiency: Efficiency) -> str:
    """``850 / 1,240 (n 12, measured by dabench)``: time to first token p50 / p95 in ms with
    its sample size and source, ``n/a`` when no episode recorded one."""
    if not efficiency.ttft_n:
        return NA
    p50, p95 = num(efficiency.ttft_ms_p50, 0), num(efficiency.ttft_ms_p95, 0)
    return f"{p50} / {p95} (n {efficiency.ttft_n}, {ttft_source(efficiency)})"


def ttft_source(efficiency: Efficiency) -> str:
    """The label of an arm's time-to-first-token source (``measured by dabench``, ...)."""
    return TTFT_SOURCES.get(efficiency.ttft_source or "", "source unknown")


FILTERS = {
    "pct": pct,
    "num": num,
    "usd": usd,
    "ci": ci,
    "delta": delta,
    "verdict": verdict,
    "verdict_words": verdict_words,
    "points": signed_points,
    "ttft": ttft,
    "ttft_source": ttft_source,
}
"""Jinja filters available in every report template."""
