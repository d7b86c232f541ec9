"""``dabench report``: statistics, ``report.md`` and ``report.html`` for one run directory."""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dabench.report.context import build_context
from dabench.report.html import MAX_TRANSCRIPTS, write_html
from dabench.report.markdown import render_markdown
from dabench.stats import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    RunData,
    RunStats,
    build_frame,
    compute_stats,
    load_run,
    write_stats,
)

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
    run = load_run(run_dir)
    # The run's records live until the reports are written: keep the cyclic GC from
    # rescanning them on every collection (gc.freeze moves them to a permanent generation).
    gc.freeze()
    try:
        return _write(run_dir, run, baseline_arm, seed, resamples, max_transcripts, step)
    finally:
        gc.unfreeze()


def _write(
    run_dir: Path,
    run: RunData,
    baseline_arm: str | None,
    seed: int,
    resamples: int,
    max_transcripts: int,
    step: Callable[[str], None],
) -> ReportFiles:
    frame = build_frame(run)
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
    write_html(ctx, html_path, max_transcripts=max_transcripts)
    return ReportFiles(stats, stats_path, md_path, html_path)
