"""``dabench plan`` warns where its variance model degenerates (a 0 % or 100 % baseline) and
when a design needs more tasks than the baseline's suite has (issue #28)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from dabench.cli import app
from dabench.stats.plan import make_plan, plan_warnings
from dabench.stats.synthetic import SyntheticArm, SyntheticSpec, write_synthetic_run


def test_a_degenerate_baseline_is_named() -> None:
    for rate in (0.0, 1.0):
        rates = np.full(20, rate)
        plan = make_plan(rates, 0.1 if rate == 0 else -0.1, k_max=2)
        assert any(f"passes {rate:.0%} of its tasks" in w for w in plan_warnings(rates, plan))
    rates = np.array([0.2, 0.6, 0.9])
    assert plan_warnings(rates, make_plan(rates, 0.1, k_max=2)) == []


def test_more_tasks_than_the_suite_has_is_named() -> None:
    rates = np.array([0.3, 0.5, 0.7] * 4)
    plan = make_plan(rates, 0.1, k_max=3)
    assert all(r.tasks is None or r.tasks > 12 for r in plan.rows)
    (warning,) = plan_warnings(rates, plan, suite_tasks=12)
    assert warning.startswith("the baseline's suite has 12 tasks; the design for k = 1, 2, 3")
    assert plan_warnings(rates, plan, suite_tasks=100_000) == []


def test_the_plan_command_prints_the_warnings_unwrapped(tmp_path: Path) -> None:
    spec = SyntheticSpec(arms=[SyntheticArm("a0", -12.0, "a0")], tasks=9, k=2, run_id="zero")
    run = write_synthetic_run(tmp_path / "run", spec)
    out = CliRunner(env={"COLUMNS": "40"}).invoke(app, ["plan", "--baseline-run", str(run)])
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert any(
        ln.startswith("warning: the baseline passes 0% of its tasks: the variance model")
        and ln.endswith("with pass rates inside (0, 1)")
        for ln in lines
    ), out.stdout
    assert any(ln.startswith("warning: the baseline's suite has 9 tasks;") for ln in lines)
