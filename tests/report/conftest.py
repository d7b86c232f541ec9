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


MIXED_EXPERIMENT = """
name: mixed
description: arms with and without cost, with missing metrics and different task sets
world: {{seed: 930, scale: 1, dir: "{world}"}}
tasks: {{smoke: true}}
k: 2
concurrency: 4
episode_timeout_s: 120
arms:
  - name: a0
    description: "probe agent on raw SQL tools (no model, no cost, no tokens)"
    target: {{kind: reference, profile: a0}}
    agent: {{kind: probe}}
    suites: [s1, s3]
  - name: a2
    description: the fake model on the knowledge layer (tokens and cost recorded)
    target: {{kind: reference, profile: a2}}
    agent: {{kind: llm, model: "fake:latency=0"}}
    suites: [s1, s3]
  - name: a3
    description: "oracle on the memory lifecycle only (S5, no tool or latency scores)"
    target: {{kind: reference, profile: a3}}
    agent: {{kind: oracle}}
    suites: [s5]
"""


@pytest.fixture(scope="session")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> ReportFiles:
    """A real run on the reference platform (smoke tasks, k = 2): a0 (probe agent, no cost
    or tokens), a2 (the fake model: tokens, a cost), a3 (oracle on S5 only: a different
    task set and no tool, latency or error scores); graded and reported."""
    import asyncio

    from rich.console import Console

    from dabench.grading import grade_run
    from dabench.runner.experiment import load_experiment
    from dabench.runner.run import ExperimentRun
    from dabench.world import build_world

    root = tmp_path_factory.mktemp("mixed")
    world = root / "world"
    build_world(930, 1, world)
    path = root / "mixed.yaml"
    path.write_text(MIXED_EXPERIMENT.format(world=world), encoding="utf-8")
    run = ExperimentRun(
        load_experiment(path),
        root / "run",
        experiment_dir=root,
        console=Console(quiet=True),
        progress=False,
    )
    asyncio.run(run.execute())
    grade_run(root / "run", progress=False)
    return write_reports(root / "run", resamples=200)
