"""``report.html``: one self-contained, offline file (inlined Chart.js, CSS, JS and data).

Server-side (jinja) renders the tables, cards and per-task rows; the embedded JSON holds
chart series and one detail record per episode, which the page's script turns into a panel
when ``#ep-<key>`` is opened. Transcripts are embedded for at most ``max_transcripts``
episodes (failed episodes first), every other field for every episode.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from markupsafe import Markup, escape

from dabench.defaults import MAX_TRANSCRIPTS as MAX_TRANSCRIPTS
from dabench.grading.tool_equivalents import call_roles
from dabench.journal.records import Episode, Grade
from dabench.report.context import ReportContext, TaskRow, score_help, score_label
from dabench.report.render import environment, static_text
from dabench.roles import Role, reference_role
from dabench.stats.model import Interval
from dabench.stats.taxonomy import episode_calls

TEXT_LIMIT = 4000
"""Characters kept of one answer, prompt or transcript message."""
ARGS_LIMIT = 600
MAX_MESSAGES = 80
MAX_CALLS = 100
SCATTER_POINTS = 1500
"""Latency-vs-quality points per arm (an even stride over completed episodes)."""


def _clip(text: str | None, limit: int = TEXT_LIMIT) -> str:
    if not text:
        return ""
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit:,} more chars]"


def _clip_values(obj: dict[str, Any]) -> dict[str, Any]:
    """A shallow copy with long string values clipped (embedded as JSON)."""
    return {k: _clip(v, ARGS_LIMIT) if isinstance(v, str) else v for k, v in obj.items()}


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def truth_with_precision(value: float, tolerance: tuple[float, float] | None) -> str:
    """A numeric truth exactly as the truth SQL returned it (the shortest text that reads
    back as the same float, never rounded for display) with what the grader accepts."""
    text = repr(float(value)).removesuffix(".0")
    if tolerance is None:
        return f"{text} (full precision)"
    tol_abs, tol_rel = tolerance
    margin = max(tol_abs, tol_rel * abs(value))
    return (
        f"{text} (full precision; accepted within ± {margin:.6g}: the larger of "
        f"absolute {tol_abs:g} and relative {tol_rel:g})"
    )


def _truth(ctx: ReportContext, task_id: str, grade: Grade | None) -> str:
    info = ctx.run.tasks.get(task_id) if ctx.run.tasks else None
    truths = ctx.run.truths.truths if ctx.run.truths else {}
    truth = truths.get(task_id)
    if truth is not None:
        if truth.value is not None:
            return truth_with_precision(truth.value, info.tolerance if info else None)
        if truth.entities:
            return ", ".join(truth.entities)
        if truth.rows:
            head = " | ".join(truth.columns)
            body = "\n".join(" | ".join(str(c) for c in r) for r in truth.rows[:20])
            return _clip(f"{head}\n{body}")
    if grade is not None:
        for check in grade.checks:
            if check.expected is not None:
                return _clip(str(check.expected))
    return ""


def _judge(grade: Grade | None) -> dict[str, Any] | None:
    if grade is None or not grade.judge:
        return None
    judge = grade.judge
    reasoning = judge.get("reasoning") or judge.get("rationale") or judge.get("explanation") or ""
    raw_claims = judge.get("claims")
    claims: list[Any] = raw_claims if isinstance(raw_claims, list) else []
    return {
        "reasoning": _clip(str(reasoning)),
        "claims": _json_safe(claims[:50]),
        "rubric": _json_safe(judge.get("rubric") or judge.get("rubric_items") or []),
    }


def _transcript(ep: Episode) -> list[dict[str, Any]]:
    out = []
    for m in ep.messages[:MAX_MESSAGES]:
        item: dict[str, Any] = {"role": m.role, "content": _clip(m.content)}
        if m.tool_calls:
            item["tool_calls"] = [_clip_values(tc) for tc in m.tool_calls]
        out.append(item)
    if len(ep.messages) > MAX_MESSAGES:
        out.append({"role": "note", "content": f"{len(ep.messages) - MAX_MESSAGES} more messages"})
    return out


def _scores(grade: Grade | None) -> list[dict[str, Any]]:
    """The episode's scores, the overall mix last; their labels and what they measure are
    in the page once (:func:`_score_names`), not repeated in every episode."""
    if grade is None:
        return []
    names = sorted(grade.scores, key=lambda n: (n == "overall", n))
    return [{"name": n, "value": grade.scores[n]} for n in names]


def _score_names(ctx: ReportContext) -> dict[str, dict[str, str]]:
    """Every score name of the run's grades under the name the arm cards use (``error_rate``
    is ``error-free tool calls``), with what it measures."""
    names = ctx.frame.scores
    return {n: {"label": score_label(n), "help": score_help(n)} for n in sorted(names)}


def _with_roles(name: str, roles: list[Role]) -> str:
    return f"{name} ({', '.join(roles)})" if roles else name


def _expected_with_role(tool: str) -> str:
    role = reference_role(tool)
    return f"{tool} (role {role})" if role else tool


def episode_detail(ctx: ReportContext, i: int, with_transcript: bool) -> dict[str, Any]:
    """The detail record of one episode (what its panel shows)."""
    frame = ctx.frame
    ep = ctx.run.episodes[i]
    grade = ctx.run.grades.get(ep.key)
    info = ctx.run.tasks.get(ep.task_id) if ctx.run.tasks else None
    calls = episode_calls(ep)
    roles = ctx.roles.get(ep.arm)
    used = list(dict.fromkeys(_with_roles(c.name, call_roles(c, roles)) for c in calls))
    return {
        "key": ep.key,
        "arm": ep.arm,
        "task": ep.task_id,
        "attempt": ep.attempt,
        "status": ep.status,
        "failure": str(frame.failure[i]),
        "passed": bool(frame.passed[i]),
        "excluded": not bool(frame.graded[i]),
        "harness_error": ep.harness_error,
        "score": None if grade is None else float(frame.score[i]),
        "scores": _scores(grade),
        "reason": grade.reason if grade else "not graded",
        "checks": [
            {
                "name": c.name,
                "passed": c.passed,
                "reason": c.reason,
                "expected": _clip(str(c.expected), 500) if c.expected is not None else None,
                "found": _clip(str(c.found), 500) if c.found is not None else None,
            }
            for c in (grade.checks if grade else [])
        ],
        "prompts": [_clip(p) for p in ep.prompts],
        "answer": _clip(ep.final_answer),
        "truth": _truth(ctx, ep.task_id, grade),
        "judge": _judge(grade),
        "expected_tools": [_expected_with_role(t) for t in info.expected_tools] if info else [],
        "used_tools": used,
        "mismatch": bool(frame.tool_mismatch[i]),
        "calls": [
            {
                "name": c.name,
                "args": _clip_values(c.arguments),
                "error": c.error_code or ("error" if c.is_error else None),
                "ms": round(c.latency_ms, 1),
            }
            for c in calls[:MAX_CALLS]
        ]
        if with_transcript
        else None,
        "steps": [
            {"name": s.name, "passed": s.passed, "detail": _clip(s.detail, 500)} for s in ep.steps
        ],
        "wall_s": round(ep.wall_ms / 1000.0, 2),
        "tokens": ep.usage.total,
        "cost": ep.cost_usd,
        "transcript": _transcript(ep) if with_transcript else None,
    }


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


def _script_json(value: Any) -> str:
    """JSON safe to embed inside a ``<script>`` element."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


PILL_MARKS = {"ok": "✓", "ko": "✕", "ex": "⚙"}
"""The mark of an episode pill per state: passed, failed, excluded."""


def episode_pills(row: TaskRow) -> Markup:
    """A task's episode links (one per attempt of every arm) as one block of HTML: what a
    template loop over the pills would write, at a fraction of its cost for 100,000 episodes."""
    return Markup(
        "".join(
            f'\n            <a class="ep-pill {escape(state)}" href="#ep-{escape(key)}">'
            f"{escape(arm)} · #{escape(attempt)} {escape(PILL_MARKS[state])}</a>\n          "
            for cell in row.cells
            for key, arm, attempt, state in cell.pills
        )
    )


EPISODES_MARK = "<dabench-episodes-json/>"
"""Where the template's episode JSON goes: streamed in place, one episode at a time (any
text from the run is escaped in the page, so it can never equal this)."""


def _episodes_json(ctx: ReportContext, with_transcript: set[int]) -> Iterator[str]:
    """The page's episode records as one JSON object keyed by episode key, in key order,
    exactly as ``_script_json`` writes a dict, but one episode at a time: each record is
    read back from the journal and dropped once written."""
    keys = [ep.key for ep in ctx.frame.episodes]
    yield "{"
    for n, i in enumerate(sorted(range(len(keys)), key=keys.__getitem__)):
        detail = _script_json(episode_detail(ctx, i, i in with_transcript))
        yield f"{',' if n else ''}{_script_json(keys[i])}:{detail}"
    yield "}"


def _chunks(ctx: ReportContext, max_transcripts: int) -> Iterator[str]:
    with_transcript = _transcript_set(ctx, max_transcripts)
    template = environment().get_template("report.html.j2")
    for chunk in template.generate(
        ctx=ctx,
        chart_js=static_text("chart.umd.js"),
        report_css=static_text("report.css"),
        report_js=static_text("report.js"),
        charts_json=_script_json(chart_data(ctx)),
        episodes_json=EPISODES_MARK,
        transcripts=len(with_transcript),
        episode_pills=episode_pills,
    ):
        if chunk == EPISODES_MARK:
            yield from _episodes_json(ctx, with_transcript)
        else:
            yield chunk


def render_html(ctx: ReportContext, *, max_transcripts: int = MAX_TRANSCRIPTS) -> str:
    """Render ``report.html`` from a report context."""
    return "".join(_chunks(ctx, max_transcripts))


def write_html(ctx: ReportContext, path: Path, *, max_transcripts: int = MAX_TRANSCRIPTS) -> Path:
    """Stream ``report.html`` to ``path`` (no in-memory copy of the page or of its episodes)."""
    with path.open("w", encoding="utf-8") as fh:
        for chunk in _chunks(ctx, max_transcripts):
            fh.write(chunk)
    return path
