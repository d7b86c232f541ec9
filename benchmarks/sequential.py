"""Sequential stopping and power analysis, checked by simulation.

Prints, for the anytime-valid paired confidence sequence (dabench.stats.sequential):

- the type-I error over simulated null experiments (both arms with the same per-task rates;
  target: at most 5 %);
- the seed system's S3 effect (25 tasks, a0 42.7 % vs a2 98.7 %, fixed design k = 5): the
  share of the fixed design's episodes used until the decision (target: at most 30 %);
- a +5-point effect: the decision never comes later than the fixed design (capped at k = 5);

and for ``dabench plan`` (dabench.stats.power): the power it plans with (a seeded simulation
below ``simulated_below`` tasks, the noncentral t from there on) against an independent
simulation of the same design (target: within 3 points) on a grid of designs, over three
heterogeneous rate profiles and a k = 1 baseline's 0/1 rates (the skewed case).

    python benchmarks/sequential.py [--sims 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from dabench.stats.power import analytic_power, power, simulate_power, simulated_below
from dabench.stats.sequential import simulate_sequential

SEED_S3_A0, SEED_S3_A2, SEED_S3_TASKS, FIXED_K = 0.427, 0.987, 25, 5


def task_rates(mean: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """Heterogeneous per-task rates with the given mean (a Beta draw, rescaled)."""
    raw = rng.beta(1.2, 1.6, n)
    return np.clip(raw * mean / raw.mean(), 0.0, 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="seconds: 50 simulations")
    args = parser.parse_args()
    if args.quick:
        args.sims = 50
    rng = np.random.default_rng(args.seed)
    console = Console()
    t0 = time.perf_counter()

    seq = Table(title=f"sequential paired delta, {args.sims} simulated experiments each")
    for col in ("scenario", "tasks", "decided 'different'", "mean rounds", "episodes vs fixed k=5",
                "worst case", "target"):  # fmt: skip
        seq.add_column(col, justify="left" if col == "scenario" else "right")
    a0 = task_rates(SEED_S3_A0, SEED_S3_TASKS, rng)
    scenarios = [
        ("null: a = b (heterogeneous tasks)", a0, a0, None, "<= 5 % type-I"),
        ("null, 100 tasks", task_rates(0.6, 100, rng), None, None, "<= 5 % type-I"),
        ("seed S3: 42.7 % vs 98.7 %", a0, np.full(SEED_S3_TASKS, SEED_S3_A2), None, "<= 30 %"),
        ("+5 points, min-delta 10", a0, np.clip(a0 + 0.05, 0, 1), 0.10, "<= 100 %"),
    ]
    for i, (name, a, b, min_delta, target) in enumerate(scenarios):
        b = a if b is None else b
        r = simulate_sequential(a, b, max_rounds=FIXED_K, sims=args.sims, min_delta=min_delta,
                                seed=args.seed + i)  # fmt: skip
        seq.add_row(name, str(a.size), f"{r.decided_different * 100:.1f} %", f"{r.mean_rounds:.2f}",
                    f"{r.mean_episode_share * 100:.1f} %", f"{r.max_episode_share * 100:.0f} %",
                    target)  # fmt: skip
    console.print(seq)

    pw = Table(title=f"dabench plan: planned power vs {args.sims} independent simulations")
    for col in ("rates (mean)", "delta", "tasks", "k", "method", "planned", "simulated",
                "gap (points)", "noncentral t alone"):  # fmt: skip
        pw.add_column(col, justify="right")
    worst = 0.0
    profiles = [task_rates(mean, 40, rng) for mean in (0.3, 0.6, 0.85)]
    profiles.append(np.array([1.0] * 24 + [0.0] * 9))  # a k = 1 baseline: 24 of 33 passed
    designs = ((0.10, 60, 3), (0.15, 30, 1), (0.20, 12, 5), (0.05, 200, 2), (0.08, 120, 1))
    skewed = ((0.10, 202, 1), (0.10, 150, 1), (0.10, 300, 2), (0.10, 81, 3), (0.20, 120, 1))
    for rates in profiles:
        for delta, n, k in skewed if set(np.unique(rates)) <= {0.0, 1.0} else designs:
            a = power(rates, delta, n, k)
            s = simulate_power(rates, delta, n, k, sims=args.sims, seed=args.seed + 1)
            worst = max(worst, abs(a - s) * 100)
            method = "noncentral t" if n >= simulated_below(rates, delta, k) else "simulation"
            t_only = analytic_power(rates, delta, n, k)
            pw.add_row(f"{rates.mean():.2f}", f"{delta:+.2f}", str(n), str(k), method,
                       f"{a * 100:.1f} %", f"{s * 100:.1f} %", f"{(a - s) * 100:+.1f}",
                       f"{t_only * 100:.1f} %")  # fmt: skip
    console.print(pw)
    console.print(f"largest planned-vs-simulated gap: {worst:.1f} points (target <= 3); "
                  f"{time.perf_counter() - t0:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
