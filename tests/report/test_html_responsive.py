"""report.html on a phone (390 px) and a desktop (1440 px), in real headless Chromium.

No table may overflow its card unless it sits in a horizontal scroll region that shows a
visible cue, every ranking number is inside the viewport or in such a region, and the
layouts chosen for each width hold: on a phone the per-arm tables become one block per row
(every number on screen), on a desktop the ranking, deltas and efficiency tables fit whole.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.environment import skip_unless_ci
from tests.report.cdp import CHROMIUM, Browser

from dabench.report.build import ReportFiles, write_reports

PHONE, DESKTOP = 390, 1440


@pytest.fixture(autouse=True)
def _chromium_present() -> None:
    if shutil.which("chromium") is None and not Path(CHROMIUM).exists():
        skip_unless_ci("Debian chromium is not installed (bash .ci/run installs it)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with Browser() as b:
        yield b


TWINS = {"a0b": "a0", "a1b": "a1", "a2b": "a2"}
"""Copies of arms (same episodes and grades under another name) in :func:`six_arms`."""


@pytest.fixture(scope="module")
def six_arms(
    reported_run: tuple[Path, ReportFiles], tmp_path_factory: pytest.TempPathFactory
) -> ReportFiles:
    """The 3-arm synthetic run with each arm twice (a0 and a0b identical, ...): six arm
    columns that cannot fit a phone, and radar outlines that lie on top of each other."""
    src, _ = reported_run
    dst = tmp_path_factory.mktemp("six-arms") / "run"
    shutil.copytree(src, dst)
    for name in ("episodes.jsonl", "grades.jsonl"):
        lines = (dst / name).read_text(encoding="utf-8").splitlines()
        out = list(lines)
        for twin, arm in TWINS.items():
            for line in lines:
                rec = json.loads(line)
                if rec["key"].startswith(f"{arm}/"):
                    rec["key"] = twin + rec["key"][len(arm) :]
                    if "arm" in rec:
                        rec["arm"] = twin
                    out.append(json.dumps(rec))
        (dst / name).write_text("\n".join(out) + "\n", encoding="utf-8")
    manifest = json.loads((dst / "manifest.json").read_text(encoding="utf-8"))
    by_name = {a["name"]: a for a in manifest["arms"]}
    manifest["arms"] += [{**by_name[arm], "name": twin} for twin, arm in TWINS.items()]
    (dst / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return write_reports(dst, resamples=200)


def _open(browser: Browser, files: ReportFiles, width: int) -> None:
    browser.resize(width, 900)
    browser.goto(files.html_path.as_uri())
    browser.settle()
    assert browser.errors() == []


# For every table in the page: does it fit inside its card, and if not, is it inside a
# horizontal scroll region (within the card) that overflows and shows its cue?
LAYOUT = """
(function () {
  var vw = document.documentElement.clientWidth;
  function scroller(el) {
    for (var n = el.parentElement; n && n !== document.body; n = n.parentElement) {
      var ox = getComputedStyle(n).overflowX;
      if (ox === 'auto' || ox === 'scroll') { return n; }
    }
    return null;
  }
  function cueShown(box) {
    var cue = box.previousElementSibling;
    if (!cue || !cue.classList.contains('scroll-cue') || cue.hidden) { return false; }
    var r = cue.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= vw
      && getComputedStyle(cue).visibility !== 'hidden' && /scroll/.test(cue.textContent);
  }
  function where(el) {
    var r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) { return 'hidden'; }
    if (r.left >= -0.5 && r.right <= vw + 0.5) { return 'viewport'; }
    var box = scroller(el);
    if (box && box.scrollWidth > box.clientWidth + 1 && cueShown(box)) { return 'scroll'; }
    return 'clipped';
  }
  var tables = Array.from(document.querySelectorAll('main table')).filter(function (t) {
    return t.getBoundingClientRect().height > 0;
  }).map(function (t) {
    var card = t.closest('.card'), cr = card.getBoundingClientRect(), r = t.getBoundingClientRect();
    var box = scroller(t);
    var fits = r.left >= cr.left - 0.5 && r.right <= cr.right + 0.5;
    var scrolls = !!box && card.contains(box) && box.getBoundingClientRect().right <= cr.right + 0.5
      && box.scrollWidth > box.clientWidth + 1 && cueShown(box);
    return { where: (t.id || card.id || (card.querySelector('h2,h3') || {}).textContent),
             fits: fits, scrolls: scrolls, stacked: t.classList.contains('stack-sm'),
             cardInside: cr.left >= -0.5 && cr.right <= vw + 0.5 };
  });
  function cells(sel) {
    return Array.from(document.querySelectorAll(sel)).filter(function (td) {
      return /[0-9]/.test(td.textContent);
    }).map(function (td) { return [td.textContent.trim().replace(/\\s+/g, ' '), where(td)]; });
  }
  return {
    pageWidth: document.documentElement.scrollWidth, viewport: vw, tables: tables,
    ranking: cells('#ranking tbody td'), deltas: cells('#deltas td.delta'),
    chips: cells('#tasks .pass-chip'),
    nav: Array.from(document.querySelectorAll('nav.tabs a')).map(function (a) {
      return [a.textContent, where(a)]; })
  };
})()
"""


def _layout(browser: Browser) -> dict[str, Any]:
    result: dict[str, Any] = browser.evaluate(LAYOUT)
    return result


def _check_no_table_clipped(layout: dict[str, Any]) -> None:
    assert layout["pageWidth"] <= layout["viewport"], "the page itself scrolls sideways"
    assert layout["tables"]
    for t in layout["tables"]:
        assert t["cardInside"], t
        assert t["fits"] or t["scrolls"], f"table overflows its card without a scroll cue: {t}"
    assert layout["ranking"]
    for text, where in layout["ranking"]:
        assert where in ("viewport", "scroll"), (text, where)


@pytest.mark.parametrize("width", [PHONE, DESKTOP])
def test_no_table_overflows_its_card_without_a_scroll_cue(
    browser: Browser, reported_run: tuple[Path, ReportFiles], six_arms: ReportFiles, width: int
) -> None:
    for files in (reported_run[1], six_arms):
        _open(browser, files, width)
        _check_no_table_clipped(_layout(browser))


def test_on_a_phone_every_key_number_is_on_screen(
    browser: Browser, reported_run: tuple[Path, ReportFiles], six_arms: ReportFiles
) -> None:
    for files in (reported_run[1], six_arms):
        _open(browser, files, PHONE)
        layout = _layout(browser)
        # Ranking, deltas and the tasks' result chips: one block per row, nothing off-screen.
        stacked = [t for t in layout["tables"] if t["stacked"]]
        assert stacked and all(t["fits"] for t in stacked), stacked
        for part in ("ranking", "deltas", "chips", "nav"):
            assert layout[part], part
            off = [c for c in layout[part] if c[1] != "viewport"]
            assert off == [], (part, off[:5])
        labels = browser.evaluate(
            "Array.from(document.querySelectorAll('#ranking tbody tr:first-child td'))"
            ".map(function (td) { return getComputedStyle(td, '::before').content; })"
        )
        assert '"accuracy"' in labels and '"composite score *"' in labels
    # Six arm columns cannot fit 390 px: those tables scroll, and say so.
    cues = browser.evaluate(
        "Array.from(document.querySelectorAll('.scroll-cue')).filter(function (c) {"
        " return !c.hidden && c.getBoundingClientRect().height > 0; }).length"
    )
    assert cues >= 1


def test_on_a_desktop_the_wide_tables_fit_whole(
    browser: Browser, reported_run: tuple[Path, ReportFiles], six_arms: ReportFiles
) -> None:
    for width in (1280, DESKTOP, 1920):
        for files in (reported_run[1], six_arms):
            _open(browser, files, width)
            layout = _layout(browser)
            assert all(t["fits"] for t in layout["tables"]), [
                t for t in layout["tables"] if not t["fits"]
            ]
            assert all(w == "viewport" for _, w in layout["ranking"] + layout["deltas"])
            assert (
                browser.evaluate("document.querySelectorAll('.scroll-cue:not([hidden])').length")
                == 0
            )


def test_arm_names_keep_their_case_in_every_header(
    browser: Browser, reported_run: tuple[Path, ReportFiles]
) -> None:
    _open(browser, reported_run[1], DESKTOP)
    transforms = browser.evaluate(
        "Array.from(document.querySelectorAll('th')).map(function (th) {"
        " return getComputedStyle(th).textTransform; })"
    )
    assert transforms and set(transforms) == {"none"}


def test_identical_arms_are_told_apart_on_the_radar(
    browser: Browser, six_arms: ReportFiles
) -> None:
    _open(browser, six_arms, DESKTOP)
    styles = browser.evaluate(
        "window.dabenchCharts.filter(function (c) { return c.canvas.id === 'chart-radar'; })[0]"
        ".data.datasets.map(function (d) { return [d.label, d.pointStyle,"
        " JSON.stringify(d.borderDash), d.pointRadius]; })"
    )
    by_arm = {s[0]: s[1:] for s in styles}
    assert set(by_arm) == {"a0", "a1", "a2", *TWINS}
    for twin, arm in TWINS.items():
        assert by_arm[twin][0] != by_arm[arm][0]  # marker shape
        assert by_arm[twin][1] != by_arm[arm][1]  # line pattern
        assert by_arm[twin][2] != by_arm[arm][2]  # marker size
    note = browser.evaluate("document.getElementById('chart-radar-identical').textContent")
    for twin, arm in TWINS.items():
        assert f"{arm} = {twin}" in note
    legend = browser.evaluate(
        "window.dabenchCharts.filter(function (c) { return c.canvas.id === 'chart-radar'; })[0]"
        ".options.plugins.legend.labels.usePointStyle"
    )
    assert legend is True
