"""report.html never misleads (issue #11 item 5), checked in real headless Chromium.

The run (``mixed_run``) is a real one on the reference platform: a0 (probe agent: no cost, no
tokens), a2 (the fake model: tokens and a cost), a3 (oracle on S5 only: a different task set,
and no tool, speed, error or exact-answer scores).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.environment import skip_unless_ci
from tests.report.cdp import CHROMIUM, Browser

from dabench.report.build import ReportFiles, write_reports
from dabench.report.context import arm_color
from dabench.stats import load_run

pytestmark = pytest.mark.slow  # the fixture runs 41 real episodes


@pytest.fixture(autouse=True)
def _chromium_present() -> None:
    if shutil.which("chromium") is None and not Path(CHROMIUM).exists():
        skip_unless_ci("Debian chromium is not installed (bash .ci/run installs it)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as b:
        yield b


@pytest.fixture(scope="module")
def only_a0(mixed_run: ReportFiles, tmp_path_factory: pytest.TempPathFactory) -> ReportFiles:
    """The same run with only a0's episodes: no cost or tokens anywhere, no S5."""
    src = mixed_run.html_path.parent
    dst = tmp_path_factory.mktemp("only-a0") / "run"
    shutil.copytree(src, dst)
    for name in ("episodes.jsonl", "grades.jsonl"):
        lines = (dst / name).read_text(encoding="utf-8").splitlines()
        keep = [ln for ln in lines if json.loads(ln).get("key", "").startswith("a0/")]
        (dst / name).write_text("\n".join(keep) + "\n", encoding="utf-8")
    manifest = json.loads((dst / "manifest.json").read_text(encoding="utf-8"))
    manifest["arms"] = [a for a in manifest["arms"] if a["name"] == "a0"]
    manifest["no_model"] = True
    (dst / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return write_reports(dst, resamples=0)


def _load(browser: Browser, files: ReportFiles, hash_: str = "") -> None:
    browser.goto(files.html_path.as_uri() + hash_)
    browser.settle()
    assert browser.errors() == []


def _chart(browser: Browser, canvas: str, expr: str) -> Any:
    """Evaluate ``expr`` with ``chart`` bound to the Chart.js chart on ``canvas``."""
    return browser.evaluate(
        "(function () { var chart = window.dabenchCharts.filter(function (c) {"
        f" return c.canvas.id === '{canvas}'; }})[0]; return {expr}; }})()"
    )


def test_a_metric_an_arm_lacks_is_na_and_never_drawn_as_0(
    browser: Browser, mixed_run: ReportFiles
) -> None:
    _load(browser, mixed_run)
    labels = _chart(browser, "chart-radar", "chart.data.labels")
    a3 = _chart(
        browser,
        "chart-radar",
        "chart.data.datasets.filter(function (d) { return d.label === 'a3'; })[0].data",
    )
    skipped = _chart(
        browser,
        "chart-radar",
        "chart.getDatasetMeta(2).data.map(function (p) { return p.skip; })",
    )
    missing = {labels[i] for i, v in enumerate(a3) if v is None}
    assert missing == {
        "Cost score",
        "Error-free tool calls",
        "Exact answer",
        "Speed score",
        "Expected-tool use",
    }
    assert all(skipped[i] for i, v in enumerate(a3) if v is None)
    assert not any(skipped[i] for i, v in enumerate(a3) if v is not None)
    # A gap is never closed through the centre by a fill.
    assert _chart(browser, "chart-radar", "chart.data.datasets[2].fill") is False
    note = browser.evaluate("document.getElementById('chart-radar-na').textContent")
    assert note.startswith("n/a (not drawn): a0: Cost score; a3: ")
    # The arm card lists the same scores for every arm, n/a (no bar) where one is missing.
    rows = browser.evaluate(
        "Array.from(document.querySelectorAll('#arm-a3 .bar-row')).map(function (r) {"
        " return [r.dataset.score, r.classList.contains('na'),"
        " r.querySelector('.bar-val').textContent, r.querySelectorAll('.bar i').length]; })"
    )
    by_name = {r[0]: r[1:] for r in rows}
    assert by_name["tool"] == [True, "n/a", 0] and by_name["error_rate"] == [True, "n/a", 0]
    assert by_name["correctness"] == [False, "100.0%", 1]
    ranking = browser.evaluate(
        "Array.from(document.querySelectorAll('#ranking tr[data-arm=a3] td'))"
        ".map(function (td) { return td.textContent.trim(); })"
    )
    assert ranking[6] == "n/a" and ranking[8] == "n/a"  # expected-tool use, cost


def test_charts_without_data_become_a_one_line_note(
    browser: Browser, mixed_run: ReportFiles, only_a0: ReportFiles
) -> None:
    _load(browser, mixed_run)
    # Cost vs quality draws only the arm with a cost and says which arms it left out.
    drawn = _chart(
        browser, "chart-bubble", "chart.data.datasets.map(function (d) { return d.label; })"
    )
    assert drawn == ["a2"]
    assert browser.evaluate("document.getElementById('chart-bubble-na').textContent") == (
        "Not drawn (no cost recorded): a0, a3"
    )
    _load(browser, only_a0)
    notes = browser.evaluate(
        "Array.from(document.querySelectorAll('.empty-note')).map(function (p) {"
        " var card = p.closest('.card'); return [p.id, p.textContent,"
        " card.querySelectorAll('canvas, .canvas-box').length,"
        " card.getBoundingClientRect().height]; })"
    )
    assert [n[:3] for n in notes] == [
        [
            "chart-bubble-note",
            "No arm recorded a cost or a token count (agents that call no model): nothing to plot.",
            0,
        ],
    ]
    assert all(height < 120 for *_, height in notes), notes  # no blank 300 px box
    # No S5 in this run: no funnel chart at all, and the lifecycle section says so once.
    assert browser.evaluate("document.getElementById('chart-funnel')") is None
    text = browser.evaluate("document.body.innerText")
    assert text.count("No lifecycle protocol episodes in this run.") == 1


def test_arms_ranked_only_against_arms_of_the_same_task_set(
    browser: Browser, mixed_run: ReportFiles
) -> None:
    _load(browser, mixed_run)
    groups = browser.evaluate(
        "Array.from(document.querySelectorAll('#ranking .task-set')).map(function (g) {"
        " return [g.dataset.arms, g.querySelector('.group-title').textContent,"
        " Array.from(g.querySelectorAll('td.rank')).map(function (t) { return t.textContent; })];"
        " })"
    )
    assert groups == [
        ["a0,a2", "task set 1: 10 tasks (s1, s3) · 2 arms", ["1", "2"]],
        [
            "a3",
            "task set 2: 1 task (s5) · 1 arm (no other arm ran this task set: not ranked "
            "against the others)",
            ["1"],
        ],
    ]
    badge = browser.evaluate("document.querySelector('#arm-a3 .rank-badge').textContent")
    assert badge == "#1 of set 2"


def test_headline_scores_name_what_they_measure(browser: Browser, mixed_run: ReportFiles) -> None:
    _load(browser, mixed_run)
    headers = browser.evaluate(
        "Array.from(document.querySelectorAll('#task-set-1 thead th'))"
        ".map(function (th) { return th.textContent.trim(); })"
    )
    assert headers[:3] == ["#", "arm", "accuracy"] and headers[-1] == "composite score *"
    kpis = browser.evaluate(
        "Array.from(document.querySelectorAll('#arm-a0 .kpi span'))"
        ".map(function (s) { return s.textContent; })"
    )
    assert kpis[0] == "accuracy (20 episodes)" and kpis[1].startswith("composite score")
    # The composite shows its parts on hover and in the footnote: never mistaken for accuracy.
    title = browser.evaluate("document.querySelector('#arm-a0 .kpi.composite').title")
    assert re.match(r"composite, not accuracy \(accuracy 40\.0%\): .*correctness 40\.0%", title)
    footnote = browser.evaluate("document.getElementById('composite-footnote').textContent")
    assert "not accuracy" in footnote and "a0: composite, not accuracy (accuracy 40.0%)" in footnote
    labels = browser.evaluate(
        "Array.from(document.querySelectorAll('#arm-a2 .bar-label'))"
        ".map(function (s) { return s.textContent; })"
    )
    assert "error-free tool calls" in labels and "speed score" in labels
    assert not any("error rate" in label.lower() for label in labels)


def test_arm_colours_come_from_the_name(
    browser: Browser, mixed_run: ReportFiles, reported_run: tuple[Path, ReportFiles]
) -> None:
    dots = (
        "Array.from(document.querySelectorAll('#ranking .dot')).map(function (d) {"
        " return [d.dataset.arm, getComputedStyle(d).backgroundColor]; })"
    )

    def rgb(hex_: str) -> str:
        n = int(hex_[1:], 16)
        return f"rgb({n >> 16}, {(n >> 8) & 255}, {n & 255})"

    _load(browser, mixed_run)
    mixed = dict(browser.evaluate(dots))
    _load(browser, reported_run[1])  # arms a0, a1, a2: a2 is third there, second here
    other = dict(browser.evaluate(dots))
    assert mixed["a2"] == other["a2"] == rgb(arm_color("a2"))
    assert mixed["a0"] == other["a0"] == rgb(arm_color("a0"))
    assert len(set(mixed.values())) == 3
    assert rgb(arm_color("kb")) == rgb(arm_color("kb"))  # a hash, not an order


def test_agent_badge_comes_from_the_manifest(
    browser: Browser, mixed_run: ReportFiles, only_a0: ReportFiles
) -> None:
    _load(browser, mixed_run)
    assert browser.evaluate("document.getElementById('agent-badge').textContent") == (
        "llm, oracle, probe agents"
    )
    _load(browser, only_a0)
    assert browser.evaluate("document.getElementById('agent-badge').textContent") == (
        "no model · probe agent"
    )


POINTS_INSIDE = """
window.dabenchCharts.filter(function (c) { return c.config.type === '%s'; }).map(function (c) {
  var out = [];
  c.data.datasets.forEach(function (ds, i) {
    c.getDatasetMeta(i).data.forEach(function (p) {
      var r = p.options.radius;
      out.push([p.x - r >= 0, p.y - r >= 0, p.x + r <= c.width, p.y + r <= c.height,
                ds.clip, p.y]);
    });
  });
  return [c.canvas.id, c.chartArea.top, out];
})
"""


def test_no_point_is_clipped_and_no_stray_shadow(browser: Browser, mixed_run: ReportFiles) -> None:
    _load(browser, mixed_run)
    for kind in ("scatter", "bubble"):
        ((cid, top, points),) = browser.evaluate(POINTS_INSIDE % kind)
        assert points, cid
        for inside_l, inside_t, inside_r, inside_b, clip, _ in points:
            assert inside_l and inside_t and inside_r and inside_b and clip is False, cid
    # Some latency points sit at 100 %: the top of the chart area, drawn whole above it.
    ((_, top, points),) = browser.evaluate(POINTS_INSIDE % "scatter")
    assert any(abs(p[5] - top) < 0.5 for p in points)
    # The closed drawer is hidden outright: no shadow strip at the right edge.
    closed = browser.evaluate(
        "(function (d) { var s = getComputedStyle(d); return [s.visibility, s.boxShadow,"
        " (document.elementFromPoint(document.documentElement.clientWidth - 2, 300)"
        " || document.body).closest('#drawer') === null]; })"
        "(document.getElementById('drawer'))"
    )
    assert closed == ["hidden", "none", True]


def test_tool_not_offered_is_not_counted_against_the_arm(mixed_run: ReportFiles) -> None:
    run = load_run(mixed_run.html_path.parent)
    tools = {a["name"]: a.get("tools") for a in run.manifest.arms}
    assert "search" not in tools["a0"] and "search" in tools["a2"]
    a0 = run.grades["a0/s1.revenue-policy-page/0"]
    assert a0.passed and "tool" not in a0.scores
    assert "tool_overlap" not in [c.name for c in a0.checks]
    a2 = run.grades["a2/s1.revenue-policy-page/0"]
    assert "tool_overlap" in [c.name for c in a2.checks]
    a0_summary = mixed_run.stats.summary("a0")
    assert a0_summary is not None and a0_summary.badges["tool_mismatches"] == 0


def test_truth_carries_its_precision_and_verdicts_are_words(
    browser: Browser, mixed_run: ReportFiles
) -> None:
    run = load_run(mixed_run.html_path.parent)
    assert run.truths is not None
    ep = next(
        e
        for e in run.episodes
        if e.arm == "a0"
        and (t := run.truths.truths.get(e.task_id))
        and t.value is not None
        and not float(t.value).is_integer()
    )
    value = run.truths.truths[ep.task_id].value
    assert value is not None
    _load(browser, mixed_run, f"#ep-{ep.key}")
    shown = browser.evaluate(
        f"Array.from(document.getElementById('ep-{ep.key}').querySelectorAll('h4'))"
        ".filter(function (h) {"
        " return h.textContent === 'Ground truth'; })[0].nextElementSibling.textContent"
    )
    assert shown.startswith(f"{value!r} (full precision; accepted within ± ")
    assert float(shown.split(" ")[0]) == value
    cells = browser.evaluate(
        "Array.from(document.querySelectorAll('#deltas td.delta')).map(function (td) {"
        " var v = td.querySelector('.verdict'); return v ? v.textContent : null; })"
    )
    assert cells and all(
        c is not None
        and (
            c.startswith(("better (", "worse (", "no significant difference ("))
            or c == "not compared: no shared task"
        )
        for c in cells
    ), cells
