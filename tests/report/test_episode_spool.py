"""The page's episode records from the spool of a streamed run equal those built from the
loaded run: transcripts spooled, read back, or left out, and a retried harness error."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.stats.builders import call, episode, grade, write_run

from dabench.report.build import ReportFiles, write_reports
from dabench.report.context import build_context
from dabench.report.episodes import DetailSpool, script_json
from dabench.report.html import render_html
from dabench.stats import compute_stats, load_run
from dabench.stats.frame import build_frame, stream_run


def _episodes(html: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="dabench-episodes">(.*?)</script>', html)
    assert match
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def _loaded_page(run_dir: Path, max_transcripts: int) -> dict[str, Any]:
    """The records as the loaded (not streamed) run writes them: every episode in memory."""
    run = load_run(run_dir)
    frame = build_frame(run)
    ctx = build_context(run, compute_stats(run, resamples=0, frame=frame), frame)
    return _episodes(render_html(ctx, max_transcripts=max_transcripts))


@pytest.mark.parametrize("max_transcripts", [0, 7, 40, 60, 1000])
def test_spooled_records_equal_the_loaded_run(
    reported_run: tuple[Path, ReportFiles], tmp_path: Path, max_transcripts: int
) -> None:
    run_dir, _ = reported_run
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    files = write_reports(copy, resamples=0, max_transcripts=max_transcripts)
    spooled = _episodes(files.html_path.read_text(encoding="utf-8"))
    assert spooled == _loaded_page(copy, max_transcripts)
    shown = sum(1 for e in spooled.values() if e["transcript"] is not None)
    assert shown == min(max_transcripts, len(spooled))


def test_transcripts_not_spooled_are_read_back(tmp_path: Path) -> None:
    """The grades say four episodes fail, so with a limit of 4 no passed episode's transcript
    is spooled; asked for every transcript, the spool reads those back from the journal. A
    retried harness error's first record is spooled but never shown."""
    eps, grades = [], []
    for i in range(6):  # passed first, then failed: a limit of 4 shows only failures
        ep = episode("a0", f"t{i}", calls=[call("sql_query", sql=f"select {i}")])
        eps.append(ep)
        grades.append(grade(ep, passed=i < 3))
    retried = episode("a0", "t9", status="harness_error")
    again = episode("a0", "t9", calls=[call("search", query="x" * 900)])
    eps += [retried, again]
    grades.append(grade(again, passed=False))
    run_dir = write_run(tmp_path / "run", eps, grades, k=1)

    spool = DetailSpool(4)
    run, frame = stream_run(run_dir, spool.add)
    try:
        keys = [ep.key for ep in frame.episodes]
        assert len(keys) == 7 and keys.count("a0/t9/0") == 1
        texts = {}
        for i, key in enumerate(keys):
            texts[key] = json.loads(spool.text(run.episodes, frame, i, with_transcript=True))
        loaded = _loaded_page(run_dir, 1000)
        assert texts == loaded  # every record with its transcript, whatever was spooled
        assert 0 < spool.read_back < 7
        assert texts["a0/t9/0"]["status"] == "completed"
        assert texts["a0/t9/0"]["calls"][0]["args"]["query"].startswith("x" * 600 + "…")
    finally:
        run.close()
        spool.close()
    page = _episodes(write_reports(run_dir, resamples=0, max_transcripts=4).html_path.read_text())
    assert page == _loaded_page(run_dir, 4)
    assert {k for k, e in page.items() if e["transcript"] is not None} == {
        "a0/t3/0",
        "a0/t4/0",
        "a0/t5/0",
        "a0/t9/0",
    }


def test_script_json_writes_what_orjson_refuses() -> None:
    """A value the fast encoder refuses is written by the standard library, escaped and with
    NaN as null: an integer beyond 64 bits, a lone surrogate from a tool's output."""
    text = script_json({"b": 2**70, "a": "\ud800</script>", "c": float("nan")})
    assert json.loads(text) == {"a": "\ud800\u003c/script\u003e", "b": 2**70, "c": None}
    assert "<" not in text and text.index('"a"') < text.index('"b"')
    assert script_json({"z": float("inf"), "y": [1.5]}) == '{"y":[1.5],"z":null}'


def test_the_page_data_is_strict_json_whatever_the_run_holds(tmp_path: Path) -> None:
    """An integer beyond 64 bits in a tool's arguments (which orjson refuses) and line
    separators in an answer: both embedded blobs stay strict JSON (no NaN, no bare
    Infinity), and the values come back intact."""
    hostile = episode(
        "a", "t1", answer="x\u2028y </script> \u00e9", calls=[call("sql_query", n=2**80)]
    )
    plain = episode("a", "t2")
    run = write_run(
        tmp_path / "run", [hostile, plain], [grade(hostile, False), grade(plain, True)], k=1
    )
    html = write_reports(run, resamples=0).html_path.read_text(encoding="utf-8")

    def strict(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")

    blobs = {}
    for element in ("dabench-episodes", "dabench-charts"):
        match = re.search(rf'<script type="application/json" id="{element}">(.*?)</script>', html)
        assert match, element
        blobs[element] = json.loads(match.group(1), parse_constant=strict)
    episodes = blobs["dabench-episodes"]
    assert episodes["a/t1/0"]["answer"] == "x\u2028y </script> \u00e9"
    assert episodes["a/t1/0"]["calls"][0]["args"]["n"] == 2**80
    assert episodes["a/t2/0"]["passed"] and not episodes["a/t1/0"]["passed"]
