"""Power analysis and the sequential confidence sequence, checked against simulations of the
same designs (bounded sizes here; benchmarks/sequential.py runs 2,000 experiments each)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.stats.builders import episode, grade, write_run
from typer.testing import CliRunner

from dabench.cli import app
from dabench.stats.plan import make_plan, plan_warnings, profile_run, run_mdd
from dabench.stats.power import (
    analytic_power,
    power,
    simulate_power,
    simulated_below,
    skewness,
    t_critical,
    tasks_needed,
)
from dabench.stats.rundir import load_run
from dabench.stats.sequential import PairedSequence, run_sequential, simulate_sequential

RATES = np.array([0.1, 0.3, 0.5, 0.7, 0.9, 0.2, 0.4, 0.6, 0.8, 0.45])


def test_t_critical_values() -> None:
    assert t_critical(9, 0.05) == pytest.approx(2.2622, abs=1e-3)
    assert t_critical(29, 0.05) == pytest.approx(2.0452, abs=1e-3)
    assert t_critical(1000, 0.01) == pytest.approx(2.5808, abs=2e-3)


@pytest.mark.parametrize(("delta", "n", "k"), [(0.10, 120, 1), (0.06, 150, 3), (0.2, 30, 2)])
def test_planned_power_agrees_with_simulation(delta: float, n: int, k: int) -> None:
    planned = power(RATES, delta, n, k)
    simulated = simulate_power(RATES, delta, n, k, sims=3000, seed=11)
    assert abs(planned - simulated) < 0.03


def test_tasks_needed_is_the_smallest_design_reaching_the_target() -> None:
    n = tasks_needed(RATES, 0.08, 3)
    assert n is not None and n > 100  # the analytic regime
    assert analytic_power(RATES, 0.08, n, 3) >= 0.8 > analytic_power(RATES, 0.08, n - 1, 3)
    small = tasks_needed(RATES, 0.30, 5)
    assert small is not None and small < 100
    assert power(RATES, 0.30, small, 5) >= 0.8 > power(RATES, 0.30, small - 1, 5)
    assert tasks_needed(RATES, 0.001, 1, max_tasks=1000) is None


K1_BASELINE = np.array([1.0] * 24 + [0.0] * 9)
"""A k = 1 run's per-task rates: 24 of 33 tasks passed once, 9 failed once."""


@pytest.mark.parametrize(("delta", "n", "k"), [(0.10, 202, 1), (0.10, 150, 1), (0.10, 81, 3)])
def test_planned_power_agrees_with_simulation_on_a_skewed_baseline(
    delta: float, n: int, k: int
) -> None:
    """With rates of 0 and 1 only the failed tasks can differ, so the paired difference is
    skewed and the noncentral t is off by 10-17 points at 100-300 tasks: the plan simulates."""
    planned = power(K1_BASELINE, delta, n, k)
    simulated = simulate_power(K1_BASELINE, delta, n, k, sims=4000, seed=11)
    assert abs(planned - simulated) < 0.03
    assert n < simulated_below(K1_BASELINE, delta, k)
    assert abs(analytic_power(K1_BASELINE, delta, n, k) - simulated) > 0.05


def test_skewness_is_exact() -> None:
    """The exact skewness against the sample skewness of simulated paired differences."""
    rng = np.random.default_rng(5)
    for rates, delta, k in ((K1_BASELINE, 0.1, 1), (RATES, 0.2, 3)):
        p_a = rates[rng.integers(0, rates.size, 400_000)]
        p_b = np.clip(p_a + delta, 0, 1)
        d = (rng.binomial(k, p_b) - rng.binomial(k, p_a)) / k
        sample = float(((d - d.mean()) ** 3).mean() / d.std() ** 3)
        assert skewness(rates, delta, k) == pytest.approx(sample, abs=0.05)
    assert skewness(np.ones(5), 0.1, 1) == 0.0  # nothing can differ


def test_tasks_needed_on_a_skewed_baseline_reaches_the_target() -> None:
    n = tasks_needed(K1_BASELINE, 0.10, 1)
    assert n is not None and 100 < n < simulated_below(K1_BASELINE, 0.10, 1)
    assert simulate_power(K1_BASELINE, 0.10, n, 1, sims=4000, seed=3) >= 0.77
    assert simulate_power(K1_BASELINE, 0.10, int(n * 0.8), 1, sims=4000, seed=3) < 0.8


def test_plan_warns_about_a_k1_baseline() -> None:
    plan = make_plan(K1_BASELINE, 0.2, k_max=1)
    assert any("k = 1" in w for w in plan_warnings(K1_BASELINE, plan))
    assert not any("k = 1" in w for w in plan_warnings(RATES, make_plan(RATES, 0.2, k_max=1)))


def test_plan_rows_cost_and_wall() -> None:
    plan = make_plan(RATES, 0.2, k_max=2, cost_per_episode=0.01, wall_s_per_episode=8.0,
                     concurrency=4)  # fmt: skip
    row = plan.rows[0]
    assert row.tasks is not None and row.episodes == 2 * row.tasks
    assert row.cost_usd == pytest.approx(row.episodes * 0.01)
    assert row.wall_s == pytest.approx(row.episodes * 8.0 / 4)


def test_plan_from_a_run_and_its_minimum_detectable_delta(tmp_path: Path) -> None:
    eps, grades = [], []
    for t in range(20):
        for attempt in range(3):
            ep = episode("a0", f"t{t}", attempt=attempt, cost=0.02, wall_s=5.0)
            eps.append(ep)
            grades.append(grade(ep, (t + attempt) % 3 != 0))
    run = write_run(tmp_path / "r", eps, grades, k=3)
    profile = profile_run(load_run(run))
    assert profile.tasks == 20 and profile.k == 3
    assert profile.cost_per_episode == pytest.approx(0.02)
    mdd = run_mdd(profile)
    assert mdd is not None and 0.05 < mdd < 0.6
    result = CliRunner().invoke(app, ["plan", "--baseline-run", str(run), "--min-delta", "0.3"])
    assert result.exit_code == 0, result.output
    assert "this run's design detects" in result.output and "$" in result.output
    both = CliRunner().invoke(app, ["plan", "--baseline-run", str(run), "--rates", "0.5"])
    assert both.exit_code != 0


def test_sequence_decides_a_large_effect_in_the_first_round() -> None:
    x = np.array([1.0] * 15 + [0.0] * 10)
    state = run_sequential([x], alpha=0.05)
    assert state.decision == "better" and state.rounds == 1 and state.low > 0


def test_sequence_covers_and_decides_equivalence() -> None:
    rng = np.random.default_rng(3)
    rounds = [rng.binomial(1, 0.5, 400).astype(float) - rng.binomial(1, 0.5, 400)
              for _ in range(10)]  # fmt: skip
    state = run_sequential(rounds, min_delta=0.15)
    assert state.decision == "equivalent" and -0.15 < state.low < 0 < state.high < 0.15


def test_sequence_is_valid_under_heterogeneous_nulls() -> None:
    """Type-I error at most alpha (bounded simulation; the benchmark runs 2,000)."""
    rng = np.random.default_rng(1)
    rates = rng.beta(1.2, 1.6, 25)
    null = simulate_sequential(rates, rates, max_rounds=5, sims=300, seed=4)
    assert null.decided_different <= 0.05
    big = simulate_sequential(rates * 0.427 / rates.mean(), np.full(25, 0.987), max_rounds=5,
                              sims=100, seed=5)  # fmt: skip
    assert big.decided_different == 1.0 and big.mean_episode_share <= 0.3


def test_sequence_rejects_bad_input() -> None:
    seq = PairedSequence()
    with pytest.raises(ValueError, match="at least one"):
        seq.add_round([])
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        seq.add_round([2.0])
