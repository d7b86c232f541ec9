"""``dabench report``: statistics, ``report.md`` and ``report.html`` for one run directory."""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dabench.report.context import build_context
from dabench.report.episodes import DetailSpool
from dabench.report.html import MAX_TRANSCRIPTS, write_html
from dabench.report.markdown import render_markdown
from dabench.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    EpisodeFrame,
    RunData,
    RunStats,
    compute_stats,
    write_stats,
)
from dabench.stats.frame import stream_run

REPORT_MD = "report.md"
REPORT_HTML = "report.html"


@dataclass(frozen=True)
class ReportFiles:
    """What :func:`write_reports` wrote."""

    stats: RunStats
    stats_path: Path
    markdown_path: Path
    html_path: Path


def write_reports(
    run_dir: Path | str,
    *,
    baseline_arm: str | None = None,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    max_transcripts: int = MAX_TRANSCRIPTS,
    progress: Callable[[str], None] | None = None,
) -> ReportFiles:
    """Compute ``stats.json`` and write ``report.md`` and ``report.html`` into ``run_dir``."""
    step = progress or (lambda _msg: None)
    run_dir = Path(run_dir)
    step("loading the run")
    # The journal is streamed into the frame (no episode or grade is held) and into the
    # spool of the page's episode records (a temporary file). Parsing makes no cyclic
    # garbage, so the cyclic GC is paused meanwhile; what the frame keeps then lives until
    # the reports are written: gc.freeze moves it to a permanent generation that
    # collections no longer rescan.
    spool = DetailSpool(max_transcripts)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        run, frame = stream_run(run_dir, spool.add)
    except BaseException:
        spool.close()
        raise
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
    try:
        return _write(run_dir, run, frame, baseline_arm, seed, resamples, spool, step)
    finally:
        run.close()
        spool.close()
        gc.unfreeze()


def _write(
    run_dir: Path,
    run: RunData,
    frame: EpisodeFrame,
    baseline_arm: str | None,
    seed: int,
    resamples: int,
    spool: DetailSpool,
    step: Callable[[str], None],
) -> ReportFiles:
    step("computing statistics")
    stats = compute_stats(
        run, baseline_arm=baseline_arm, seed=seed, resamples=resamples, frame=frame
    )
    stats_path = write_stats(run_dir, stats)
    ctx = build_context(run, stats, frame)
    step("writing report.md")
    md_path = run_dir / REPORT_MD
    md_path.write_text(render_markdown(ctx), encoding="utf-8")
    step("writing report.html")
    html_path = run_dir / REPORT_HTML
    write_html(ctx, html_path, max_transcripts=spool.max_transcripts, spool=spool)
    return ReportFiles(stats, stats_path, md_path, html_path)
