"""report.html in a real headless Chromium: no console errors, charts drawn, permalinks open."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.environment import skip_unless_ci
from tests.report.cdp import CHROMIUM, Browser

from dabench.report.build import ReportFiles
from dabench.stats import load_run


@pytest.fixture(autouse=True)
def _chromium_present() -> None:
    if shutil.which("chromium") is None and not Path(CHROMIUM).exists():
        skip_unless_ci("Debian chromium is not installed (bash .ci/run installs it)")


# Non-transparent pixels of every chart canvas (each must have drawn something).
CANVAS_INK = """
Array.from(document.querySelectorAll('canvas')).map(function (c) {
  var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data, n = 0;
  for (var i = 3; i < d.length; i += 4) { if (d[i] > 0) { n++; } }
  return [c.id, c.width, c.height, n];
})
"""

VISIBLE = """
(function (id) {
  var el = document.getElementById(id);
  if (!el) { return null; }
  var r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && r.left < window.innerWidth && r.right > 0
    && getComputedStyle(el).visibility !== 'hidden';
})
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as b:
        yield b


def _load(browser: Browser, url: str) -> None:
    browser.goto(url)
    browser.settle()  # the drawer slides in with a short CSS transition


def test_loads_without_errors_and_every_chart_renders(
    browser: Browser, reported_run: tuple[Path, ReportFiles], tmp_path: Path
) -> None:
    _, files = reported_run
    _load(browser, files.html_path.as_uri())
    assert browser.errors() == []
    canvases = browser.evaluate(CANVAS_INK)
    ids = {c[0] for c in canvases}
    assert ids == {
        "chart-overall",
        "chart-radar",
        "chart-suite",
        "chart-difficulty",
        "chart-category",
        "chart-scatter",
        "chart-bubble",
        "chart-funnel",
    }
    for cid, width, height, ink in canvases:
        assert width > 100 and height > 100, cid
        assert ink > 2000, f"{cid} looks blank ({ink} drawn pixels)"
    assert browser.evaluate("window.dabenchCharts.length") == 8
    shot = tmp_path / "report.png"
    browser.screenshot(shot, height=2400)
    assert shot.stat().st_size > 50_000


def test_episode_permalink_opens_its_panel(
    browser: Browser, reported_run: tuple[Path, ReportFiles]
) -> None:
    run_dir, files = reported_run
    run = load_run(run_dir)
    ep = next(e for e in run.episodes if e.suite == "s3" and e.arm == "a2")
    _load(browser, f"{files.html_path.as_uri()}#ep-{ep.key}")
    assert browser.errors() == []
    assert browser.evaluate(f"{VISIBLE}('ep-{ep.key}')") is True
    text = browser.evaluate(f"document.getElementById('ep-{ep.key}').textContent")
    assert ep.task_id in text and "Ground truth" in text and "Transcript" in text
    # Its task row was expanded too.
    assert browser.evaluate(
        f"!document.getElementById('task-{ep.task_id}').nextElementSibling.hidden"
    )
    # Closing removes the panel from view; another permalink via hashchange opens another.
    browser.evaluate("document.getElementById('drawer-close').click()")
    browser.settle()
    assert browser.evaluate(f"{VISIBLE}('ep-{ep.key}')") is False
    other = next(e for e in run.episodes if e.arm == "a0" and e.status == "timeout")
    browser.evaluate(f"location.hash = '#ep-{other.key}'")
    browser.settle()
    assert browser.evaluate(f"{VISIBLE}('ep-{other.key}')") is True
    assert "timeout" in browser.evaluate(f"document.getElementById('ep-{other.key}').textContent")
    assert browser.errors() == []


def test_task_permalink_expands_the_row(
    browser: Browser, reported_run: tuple[Path, ReportFiles]
) -> None:
    run_dir, files = reported_run
    task_id = load_run(run_dir).episodes[-1].task_id
    _load(browser, f"{files.html_path.as_uri()}#task-{task_id}")
    assert browser.evaluate(f"!document.getElementById('task-{task_id}').nextElementSibling.hidden")
    pills = browser.evaluate(
        f"document.getElementById('task-{task_id}').nextElementSibling"
        ".querySelectorAll('.ep-pill').length"
    )
    assert pills == 3 * 3  # three arms, k = 3
    assert browser.errors() == []


def test_panel_of_an_episode_without_embedded_transcript(
    browser: Browser, reported_run: tuple[Path, ReportFiles], tmp_path: Path
) -> None:
    from dabench.report.build import write_reports

    run_dir, _ = reported_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    files = write_reports(copy, resamples=0, max_transcripts=5)
    run = load_run(copy)
    ep = next(e for e in run.episodes if run.grades[e.key].passed)  # failed ones come first
    _load(browser, f"{files.html_path.as_uri()}#ep-{ep.key}")
    assert browser.evaluate(f"{VISIBLE}('ep-{ep.key}')") is True
    text = browser.evaluate(f"document.getElementById('ep-{ep.key}').textContent")
    assert "not embedded (report size limit)" in text and "used:" in text
    assert browser.errors() == []


def test_ttft_kpi_is_rendered_in_the_arm_card(browser: Browser, ttft_reported: ReportFiles) -> None:
    _load(browser, f"{ttft_reported.html_path.as_uri()}#arm-kb")
    assert browser.errors() == []
    kpis = browser.evaluate(
        "Array.from(document.querySelectorAll('.kpi.ttft')).map(function (k) {"
        " var r = k.getBoundingClientRect(), text = k.innerText.replace(/\\s+/g, ' ');"
        " return [k.closest('article').id, text, r.width > 0 && r.height > 0]; })"
    )
    assert sorted(kpis) == [
        ["arm-kb", "300 ms TTFT p50 (p95 480 ms, n 5, measured by dabench)", True],
        ["arm-llm", "n/a TTFT p50", True],
    ]


def test_episode_panel_uses_the_card_score_names(
    browser: Browser, reported_run: tuple[Path, ReportFiles]
) -> None:
    run_dir, files = reported_run
    run = load_run(run_dir)
    ep = next(e for e in run.episodes if not run.grades[e.key].passed and e.arm == "a0")
    _load(browser, f"{files.html_path.as_uri()}#ep-{ep.key}")
    rows = browser.evaluate(
        f"Array.from(document.getElementById('ep-{ep.key}')"
        ".querySelectorAll('table.episode-scores tr')).slice(1).map(function (tr) {"
        " return Array.from(tr.children).map(function (td) { return td.textContent; }); })"
    )
    names = [r[0] for r in rows]
    cards = browser.evaluate(
        "Array.from(document.querySelectorAll('#arm-a0 .bar-label'))"
        ".map(function (s) { return s.textContent; })"
    )
    assert "error-free tool calls" in names and "speed score" in names and "cost score" in names
    assert names[-1] == "overall score"
    assert set(names) - {"overall score"} <= set(cards)  # the names the arm card uses
    assert not any(n in ("error rate", "latency", "overall", "tool") for n in names)
    assert all(r[2] for r in rows)  # each says what it measures
    badge = browser.evaluate(
        f"Array.from(document.getElementById('ep-{ep.key}').querySelectorAll('.badge'))"
        ".map(function (b) { return b.textContent; })"
    )
    assert any(b.startswith("overall score ") for b in badge)
    assert not any(b.startswith("score ") for b in badge)
