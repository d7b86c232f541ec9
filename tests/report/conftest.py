"""Shared fixtures: a synthetic run with its reports written once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from dabench.report.build import ReportFiles, write_reports
from dabench.stats.synthetic import SyntheticArm, SyntheticSpec, write_synthetic_run


@pytest.fixture(scope="session")
def reported_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ReportFiles]:
    """A 3-arm synthetic run (36 tasks, k = 3) with stats.json, report.md and report.html."""
    spec = SyntheticSpec(
        arms=[
            SyntheticArm("a0", 0.2, "a0", mean_calls=9.0),
            SyntheticArm("a1", 0.8, "a1", mean_calls=7.0),
            SyntheticArm("a2", 1.6, "a2", gate=True),
        ],
        tasks=36,
        k=3,
        run_id="report-fixture",
    )
    run_dir = write_synthetic_run(tmp_path_factory.mktemp("rep") / "run", spec)
    return run_dir, write_reports(run_dir, resamples=1000)


@pytest.fixture(scope="session")
def ttft_reported(tmp_path_factory: pytest.TempPathFactory) -> ReportFiles:
    """The reports of :func:`tests.stats.builders.ttft_run` (a Kibana-like arm with TTFT and an
    LLM-provider arm without)."""
    from tests.stats.builders import ttft_run

    run_dir = tmp_path_factory.mktemp("ttft") / "run"
    run_dir.mkdir()
    return write_reports(ttft_run(run_dir), resamples=0)
