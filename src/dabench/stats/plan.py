"""``dabench plan``: the tasks and trials a paired comparison needs, and what they cost.

Inputs are the baseline arm's per-task pass rates (from a run, or assumed), the smallest delta
worth detecting, alpha and power (see :mod:`dabench.stats.power` for the design). For each
number of trials ``k`` the plan gives the tasks needed, the episodes (both arms), and the
expected cost and wall time from the run's per-episode figures at a given concurrency.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from dabench.errors import UserInputError
from dabench.stats.power import minimum_detectable_delta, power, simulate_power, tasks_needed
from dabench.stats.rundir import RunData


@dataclass(frozen=True)
class RunProfile:
    """What a baseline run tells a plan: per-task rates and per-episode cost and time."""

    arm: str
    rates: npt.NDArray[np.float64]
    k: int
    tasks: int
    wall_s_per_episode: float | None
    cost_per_episode: float | None
    """Mean reported cost; ``None`` when no episode recorded one."""
    mean_input_tokens: float
    mean_output_tokens: float


def profile_run(run: RunData, arm: str | None = None) -> RunProfile:
    """Per-task pass rates of ``arm`` (default: the first) over graded, non-excluded episodes."""
    name = arm or run.arm_names[0]
    if name not in run.arm_names:
        raise UserInputError(f"--arm {name!r}: the run has arms {', '.join(run.arm_names)}")
    by_task: dict[str, list[bool]] = {}
    walls, costs, inputs, outputs = [], [], [], []
    for ep in run.episodes:
        grade = run.grades.get(ep.key)
        if ep.arm != name or grade is None or grade.excluded:
            continue
        by_task.setdefault(ep.task_id, []).append(grade.passed)
        walls.append(ep.wall_ms / 1000)
        if ep.cost_usd is not None:
            costs.append(ep.cost_usd)
        inputs.append(ep.usage.input + ep.usage.cache_read + ep.usage.cache_write)
        outputs.append(ep.usage.output)
    if not by_task:
        raise UserInputError(f"arm {name!r} has no graded episodes in {run.run_dir}")
    rates = np.array([np.mean(v) for v in by_task.values()], dtype=np.float64)
    return RunProfile(
        arm=name,
        rates=rates,
        k=run.manifest.k,
        tasks=len(by_task),
        wall_s_per_episode=float(np.mean(walls)) if walls else None,
        cost_per_episode=float(np.mean(costs)) if costs else None,
        mean_input_tokens=float(np.mean(inputs)),
        mean_output_tokens=float(np.mean(outputs)),
    )


@dataclass(frozen=True)
class PlanRow:
    """One design: ``k`` trials per task and arm."""

    k: int
    tasks: int | None
    """Tasks needed for the target power (``None``: more than the cap)."""
    episodes: int | None
    power: float | None
    simulated_power: float | None
    cost_usd: float | None
    wall_s: float | None


@dataclass
class Plan:
    """The designs for one question."""

    delta: float
    alpha: float
    target_power: float
    concurrency: int
    rows: list[PlanRow] = field(default_factory=list)


def make_plan(
    rates: npt.NDArray[np.float64],
    delta: float,
    *,
    alpha: float = 0.05,
    target_power: float = 0.8,
    k_max: int = 5,
    concurrency: int = 8,
    cost_per_episode: float | None = None,
    wall_s_per_episode: float | None = None,
    simulate: int = 0,
    seed: int = 0,
) -> Plan:
    """Tasks, episodes, cost and wall time for ``k = 1..k_max``; with ``simulate`` > 0, the
    power of each design also by that many simulated experiments."""
    if not 0 < abs(delta) <= 1:
        raise UserInputError(f"--min-delta {delta}: expected a non-zero delta within ±1")
    if not 0 < alpha < 1 or not 0 < target_power < 1:
        raise UserInputError("--alpha and --power must lie strictly between 0 and 1")
    plan = Plan(delta, alpha, target_power, concurrency)
    for k in range(1, k_max + 1):
        n = tasks_needed(rates, delta, k, alpha=alpha, target=target_power)
        episodes = None if n is None else 2 * n * k
        plan.rows.append(
            PlanRow(
                k=k,
                tasks=n,
                episodes=episodes,
                power=None if n is None else power(rates, delta, n, k, alpha),
                simulated_power=(
                    simulate_power(rates, delta, n, k, alpha=alpha, sims=simulate, seed=seed)
                    if n is not None and simulate
                    else None
                ),
                cost_usd=None if episodes is None or cost_per_episode is None
                else episodes * cost_per_episode,
                wall_s=None if episodes is None or wall_s_per_episode is None
                else episodes * wall_s_per_episode / concurrency,
            )
        )  # fmt: skip
    return plan


def run_mdd(profile: RunProfile, *, alpha: float = 0.05, target_power: float = 0.8) -> float | None:
    """The minimum detectable delta of the run's own design (its tasks and k)."""
    return minimum_detectable_delta(
        profile.rates, profile.tasks, profile.k, alpha=alpha, target=target_power
    )


def plan_warnings(
    rates: npt.NDArray[np.float64], plan: Plan, suite_tasks: int | None = None
) -> list[str]:
    """What a reader of ``plan`` must know: a baseline at 0 % or 100 % (where the per-task
    variance the design rests on vanishes), per-task rates of only 0 and 1 (a k = 1 run),
    and designs needing more tasks than the
    baseline's suite has (``suite_tasks``)."""
    warnings: list[str] = []
    mean = float(np.mean(rates)) if rates.size else 0.0
    if 0.0 < mean < 1.0 and set(np.unique(rates).tolist()) <= {0.0, 1.0}:
        warnings.append(
            "every baseline task passed always or never (a k = 1 run gives rates of 0 or 1): "
            "the plan assumes the baseline arm repeats each outcome on every attempt, so it "
            "overstates the power if tasks vary between attempts; plan from a run with k >= 2"
        )
    if mean in (0.0, 1.0):
        warnings.append(
            f"the baseline passes {mean:.0%} of its tasks: the variance model degenerates at "
            "0 % and 100 % (no task varies), so these figures assume a spread the baseline "
            "does not show; plan from a run or --rates with pass rates inside (0, 1)"
        )
    if suite_tasks is not None:
        over = [r.k for r in plan.rows if r.tasks is None or r.tasks > suite_tasks]
        if over:
            ks = ", ".join(str(k) for k in over)
            warnings.append(
                f"the baseline's suite has {suite_tasks} tasks; the design for k = {ks} needs "
                "more tasks than that (more trials per task, a larger --min-delta, or more "
                "tasks)"
            )
    return warnings
