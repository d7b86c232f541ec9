"""``report.html``: one self-contained, offline file (inlined Chart.js, CSS, JS and data).

Server-side (jinja) renders the tables, cards and per-task rows; the embedded JSON holds
chart series and one detail record per episode, which the page's script turns into a panel
when ``#ep-<key>`` is opened. Transcripts are embedded for at most ``max_transcripts``
episodes (failed episodes first), every other field for every episode.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from markupsafe import Markup, escape

from dabench.defaults import MAX_TRANSCRIPTS as MAX_TRANSCRIPTS
from dabench.report.context import ReportContext, TaskRow, score_help, score_label
from dabench.report.episodes import (
    DetailSources,
    DetailSpool,
    detail_text,
    script_json,
)
from dabench.report.render import environment, static_text
from dabench.stats.model import Interval
from dabench.stats.rundir import EpisodeLines

SCATTER_POINTS = 1500
"""Latency-vs-quality points per arm (an even stride over completed episodes)."""


def _score_names(ctx: ReportContext) -> dict[str, dict[str, str]]:
    """Every score name of the run's grades under the name the arm cards use (``error_rate``
    is ``error-free tool calls``), with what it measures."""
    names = ctx.frame.scores
    return {n: {"label": score_label(n), "help": score_help(n)} for n in sorted(names)}


def _transcript_set(ctx: ReportContext, limit: int) -> set[int]:
    n = len(ctx.frame)
    if n <= limit:
        return set(range(n))
    order = np.lexsort((np.arange(n), ctx.frame.passed))  # failed (False) first
    return set(order[:limit].tolist())


def _interval(iv: Interval | None) -> dict[str, float | None]:
    if iv is None:
        return {"est": None, "low": None, "high": None}
    return {"est": iv.estimate, "low": iv.low, "high": iv.high}


def _radar(ctx: ReportContext) -> dict[str, Any]:
    """Radar axes and each arm's values (0..1); ``None`` where the arm lacks the metric
    (drawn as a gap, never as 0)."""
    dims: list[tuple[str, str]] = [
        ("accuracy", "Accuracy"),
        ("pass_hat_k", f"pass^{ctx.stats.k}"),
        ("reliability", "Reliability"),
        ("completion", "Completion"),
        ("consistency", "Consistency"),
        ("ves", "VES-style efficiency"),
        ("tool_exec", "Tool exec rate"),
    ]
    score_names = sorted({n for s in ctx.stats.summaries for n in s.score_means if n != "overall"})
    dims += [(f"score:{n}", score_label(n).capitalize()) for n in score_names]
    if len(dims) < 8:
        dims.append(("score:overall", "Overall score"))
    values: dict[str, list[float | None]] = {}
    for s in ctx.stats.summaries:
        g = ctx.cell(s.arm, "overall")
        if g is None:
            continue
        sd = g.consistency.sd
        table = {
            "accuracy": g.accuracy.estimate,
            "pass_hat_k": g.pass_hat_k.estimate,
            "reliability": s.reliability,
            "completion": s.completion_rate,
            "consistency": None if sd is None else max(0.0, 1.0 - sd / 0.5),
            "ves": g.efficiency.ves,
            "tool_exec": g.efficiency.tool_exec_rate,
        }
        row: list[float | None] = []
        for key, _ in dims:
            v = s.score_means.get(key[6:]) if key.startswith("score:") else table.get(key)
            row.append(round(float(v), 4) if v is not None else None)
        values[s.arm] = row
    same: dict[tuple[float | None, ...], list[str]] = {}
    for arm, row in values.items():
        same.setdefault(tuple(row), []).append(arm)
    identical = [arms for arms in same.values() if len(arms) > 1]
    return {"labels": [label for _, label in dims], "values": values, "identical": identical}


def _breakdown(ctx: ReportContext, dimension: str) -> dict[str, Any]:
    labels = ctx.values.get(dimension, [])
    series: dict[str, list[dict[str, float | None]]] = {}
    for arm in ctx.arms:
        row: list[dict[str, float | None]] = []
        for v in labels:
            g = ctx.cell(arm, dimension, v)
            row.append(_interval(g.accuracy if g else None))
        series[arm] = row
    return {"labels": labels, "series": series}


def _scatter(ctx: ReportContext) -> dict[str, list[list[float]]]:
    f = ctx.frame
    out: dict[str, list[list[float]]] = {}
    for code, arm in enumerate(f.arms):
        idx = np.flatnonzero((f.arm == code) & f.graded & f.completed)
        if idx.size > SCATTER_POINTS:
            idx = idx[np.linspace(0, idx.size - 1, SCATTER_POINTS).astype(int)]
        out[arm] = [[round(float(f.wall_s[i]), 2), round(float(f.score[i]), 4)] for i in idx]
    return out


def _bubble(ctx: ReportContext) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for arm in ctx.arms:
        g = ctx.cell(arm, "overall")
        if g is None:
            continue
        out[arm] = {
            "cost": g.efficiency.cost_mean_usd,
            "tokens": g.efficiency.tokens_mean or None,
            "score": g.score.estimate,
            "episodes": g.n_episodes,
        }
    return out


def _funnel(ctx: ReportContext) -> dict[str, Any] | None:
    if not ctx.stats.funnel:
        return None
    labels: list[str] = []
    for steps in ctx.stats.funnel.values():
        for st in steps:
            if st.name not in labels:
                labels.append(st.name)
    series: dict[str, list[float | None]] = {}
    for arm, steps in ctx.stats.funnel.items():
        by_name = {st.name: st for st in steps}
        total = max((st.episodes for st in steps), default=0)
        series[arm] = [
            round(by_name[n].reached / total, 4) if n in by_name and total else None for n in labels
        ]
    return {"labels": labels, "series": series}


def chart_data(ctx: ReportContext) -> dict[str, Any]:
    """Every chart's series, embedded as JSON."""
    overall = {}
    for arm in ctx.arms:
        g = ctx.cell(arm, "overall")
        if g is not None:
            overall[arm] = {
                "accuracy": _interval(g.accuracy),
                "pass_hat_k": _interval(g.pass_hat_k),
                "score": _interval(g.score),
            }
    return {
        "arms": ctx.arms,
        "colors": ctx.colors,
        "baseline": ctx.stats.baseline_arm,
        "k": ctx.stats.k,
        "overall": overall,
        "radar": _radar(ctx),
        "breakdowns": {d: _breakdown(ctx, d) for d in ("suite", "category", "difficulty")},
        "scatter": _scatter(ctx),
        "bubble": _bubble(ctx),
        "funnel": _funnel(ctx),
        "score_names": _score_names(ctx),
    }


PILL_MARKS = {"ok": "✓", "ko": "✕", "ex": "⚙"}
"""The mark of an episode pill per state: passed, failed, excluded."""


def episode_pills(row: TaskRow) -> Markup:
    """A task's episode links (one per attempt of every arm) as one block of HTML: what a
    template loop over the pills would write, at a fraction of its cost for 100,000 episodes."""
    around: dict[tuple[str, str], tuple[str, str, str]] = {}
    """(arm, state) -> the escaped texts around key and attempt: the same few in every pill."""
    parts: list[str] = []
    for cell in row.cells:
        for key, arm, attempt, state in cell.pills:
            texts = around.get((arm, state))
            if texts is None:
                texts = around[arm, state] = (
                    f'\n            <a class="ep-pill {escape(state)}" href="#ep-',
                    f'">{escape(arm)} · #',
                    f" {escape(PILL_MARKS[state])}</a>\n          ",
                )
            parts.append(f"{texts[0]}{escape(key)}{texts[1]}{attempt}{texts[2]}")
    return Markup("".join(parts))


EPISODES_MARK = "<dabench-episodes-json/>"
"""Where the template's episode JSON goes: streamed in place, one episode at a time (any
text from the run is escaped in the page, so it can never equal this)."""


def _episodes_json(
    ctx: ReportContext, with_transcript: set[int], spool: DetailSpool | None
) -> Iterator[str]:
    """The page's episode records as one JSON object keyed by episode key, in key order, one
    episode at a time: copied from the spool of a streamed run, else built from the run's
    episodes (read back from the journal and dropped once written)."""
    keys = [ep.key for ep in ctx.frame.episodes]
    episodes = ctx.run.episodes
    lines = episodes if spool is not None and isinstance(episodes, EpisodeLines) else None
    src = DetailSources.of(ctx.run) if lines is None else None
    yield "{"
    for n, i in enumerate(sorted(range(len(keys)), key=keys.__getitem__)):
        if spool is not None and lines is not None:
            detail = spool.text(lines, ctx.frame, i, i in with_transcript)
        else:
            assert src is not None
            detail = detail_text(src, episodes, ctx.run.grades, ctx.frame, i, i in with_transcript)
        yield f"{',' if n else ''}{script_json(keys[i])}:{detail}"
    yield "}"


def _chunks(
    ctx: ReportContext, max_transcripts: int, spool: DetailSpool | None = None
) -> Iterator[str]:
    with_transcript = _transcript_set(ctx, max_transcripts)
    template = environment().get_template("report.html.j2")
    for chunk in template.generate(
        ctx=ctx,
        chart_js=static_text("chart.umd.js"),
        report_css=static_text("report.css"),
        report_js=static_text("report.js"),
        charts_json=script_json(chart_data(ctx)),
        episodes_json=EPISODES_MARK,
        transcripts=len(with_transcript),
        episode_pills=episode_pills,
    ):
        if chunk == EPISODES_MARK:
            yield from _episodes_json(ctx, with_transcript, spool)
        else:
            yield chunk


def render_html(ctx: ReportContext, *, max_transcripts: int = MAX_TRANSCRIPTS) -> str:
    """Render ``report.html`` from a report context."""
    return "".join(_chunks(ctx, max_transcripts))


def write_html(
    ctx: ReportContext,
    path: Path,
    *,
    max_transcripts: int = MAX_TRANSCRIPTS,
    spool: DetailSpool | None = None,
) -> Path:
    """Stream ``report.html`` to ``path`` (no in-memory copy of the page or of its episodes);
    ``spool`` holds the detail records of a streamed run (:class:`DetailSpool`)."""
    with path.open("w", encoding="utf-8") as fh:
        for chunk in _chunks(ctx, max_transcripts, spool):
            fh.write(chunk)
    return path
