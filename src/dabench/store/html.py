"""The cross-run history as one offline HTML page: a table of series with SVG sparklines."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from dabench.store.trend import TrendSeries

WIDTH, HEIGHT = 160, 36


def _polyline(series: TrendSeries) -> str:
    """SVG points of the accuracy line on a fixed 0..1 scale (unknown runs skipped)."""
    n = len(series.points)
    pts = []
    for i, p in enumerate(series.points):
        if p.accuracy is None:
            continue
        x = 4 + (WIDTH - 8) * (i / (n - 1) if n > 1 else 0.5)
        y = HEIGHT - 4 - (HEIGHT - 8) * p.accuracy
        pts.append(f"{x:.1f},{y:.1f}")
    return " ".join(pts)


def write_history_html(series: list[TrendSeries], path: Path, *, source: str) -> Path:
    """Write the history page to ``path``."""
    env = Environment(
        loader=PackageLoader("dabench.store", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    html = env.get_template("history.html.j2").render(
        series=series, source=source, polyline=_polyline, width=WIDTH, height=HEIGHT
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
