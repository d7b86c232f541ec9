"""``dabench plan``: power analysis before paying for episodes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dabench.cli_values import comma_list
from dabench.errors import UserInputError
from dabench.listing import stdout_console

if TYPE_CHECKING:
    import numpy as np

    from dabench.stats.rundir import RunData


def _rates(raw: str) -> np.ndarray:
    try:
        values = [float(v) for v in comma_list(raw, "--rates", "pass rates, e.g. 0.5,0.7")]
    except ValueError:
        raise UserInputError(f"--rates {raw!r}: expected comma-separated numbers") from None
    if not values or any(not 0 <= v <= 1 for v in values):
        raise UserInputError(f"--rates {raw!r}: expected pass rates within 0..1")
    import numpy as np

    return np.asarray(values, dtype=np.float64)


def plan_cmd(
    baseline_run: Path | None = typer.Option(
        None,
        "--baseline-run",
        metavar="RUN",
        help="Take per-task pass rates, cost and time from this run.",
    ),
    arm: str | None = typer.Option(
        None, "--arm", metavar="NAME", help="The run's baseline arm (default: its first)."
    ),
    rates: str | None = typer.Option(
        None, "--rates", metavar="P,P,...", help="Assumed per-task pass rates instead of a run."
    ),
    min_delta: float = typer.Option(
        0.10, "--min-delta", metavar="D", help="Smallest delta worth detecting (0.10 = 10 points)."
    ),
    alpha: float = typer.Option(0.05, "--alpha", metavar="A", help="Two-sided significance level."),
    target_power: float = typer.Option(
        0.8, "--power", metavar="P", help="Probability of detecting the delta."
    ),
    k_max: int = typer.Option(
        5, "--k-max", min=1, max=50, metavar="K", help="Trials per task to plan for (1..K)."
    ),
    concurrency: int = typer.Option(
        8, "--concurrency", min=1, metavar="N", help="Episodes in flight, for the wall time."
    ),
    price_model: str | None = typer.Option(
        None,
        "--price-model",
        metavar="PROVIDER:MODEL",
        help="Price the run's mean tokens with this model's prices.",
    ),
    simulate: int = typer.Option(
        0, "--simulate", min=0, metavar="N", help="Also simulate each design N times."
    ),
    subset: int = typer.Option(
        0,
        "--subset",
        min=0,
        metavar="N",
        help="Also pick the N tasks with the most information per episode (from --baseline-run's "
        "arms and attempts; docs/statistics.md).",
    ),
    pool: list[Path] = typer.Option(
        [],
        "--pool",
        metavar="RUN",
        help="With --subset: pool this run's respondents (its arms and attempts) with "
        "--baseline-run's (repeatable; other models or profiles on the same tasks).",
    ),
) -> None:
    """Tasks and trials a paired comparison needs to detect --min-delta, with the expected
    episodes, cost and wall time; and the minimum detectable delta of a baseline run."""
    from rich.table import Table

    from dabench.journal.records import TokenUsage
    from dabench.providers.pricing import cost_for
    from dabench.providers.registry import split_spec
    from dabench.stats.plan import make_plan, plan_warnings, profile_run, run_mdd
    from dabench.stats.rundir import load_run

    if (baseline_run is None) == (rates is None):
        raise UserInputError("give one of --baseline-run RUN or --rates P,P,...")
    if price_model is not None:
        if baseline_run is None:
            raise UserInputError(
                f"--price-model {price_model}: prices the tokens of --baseline-run RUN; "
                "with --rates there are none"
            )
        if not split_spec(price_model)[1]:
            raise UserInputError(f"--price-model {price_model!r}: expected PROVIDER:MODEL")
    if subset and baseline_run is None:
        raise UserInputError("--subset N needs --baseline-run RUN (it ranks that run's tasks)")
    if pool and not subset:
        raise UserInputError("--pool RUN only adds respondents to --subset N")
    cost = wall = None
    suite_tasks: int | None = None
    mdd_line = ""
    run: RunData | None = None
    if baseline_run is not None:
        run = load_run(baseline_run)
        profile = profile_run(run, arm)
        base_rates = profile.rates
        wall = profile.wall_s_per_episode
        cost = profile.cost_per_episode
        suite_tasks = profile.tasks
        if price_model:
            provider, model = split_spec(price_model)
            usage = TokenUsage(
                input=round(profile.mean_input_tokens), output=round(profile.mean_output_tokens)
            )
            cost, _source = cost_for(provider, model, usage)
            if cost is None:
                raise UserInputError(f"--price-model {price_model}: not in the price table")
        mdd = run_mdd(profile, alpha=alpha, target_power=target_power)
        mdd_text = "more than 100 points" if mdd is None else f"{mdd * 100:.1f} points"
        mdd_line = (
            f"baseline arm {profile.arm}: {profile.tasks} tasks, k={profile.k}, mean pass rate "
            f"{profile.rates.mean() * 100:.1f}%; this run's design detects {mdd_text} with "
            f"{target_power:.0%} power (alpha {alpha})"
        )
    else:
        assert rates is not None
        base_rates = _rates(rates)
    plan = make_plan(
        base_rates, min_delta, alpha=alpha, target_power=target_power, k_max=k_max,
        concurrency=concurrency, cost_per_episode=cost, wall_s_per_episode=wall, simulate=simulate,
    )  # fmt: skip
    table = Table(title=f"paired design to detect {min_delta * 100:+.1f} points "
                  f"(alpha {alpha}, power {target_power:.0%})")  # fmt: skip
    for col in ("k", "tasks", "episodes", "power", "simulated", "cost", f"wall @{concurrency}"):
        table.add_column(col, justify="right", no_wrap=True)
    for r in plan.rows:
        table.add_row(
            str(r.k),
            "> 100,000" if r.tasks is None else f"{r.tasks:,}",
            "—" if r.episodes is None else f"{r.episodes:,}",
            "—" if r.power is None else f"{r.power * 100:.1f}%",
            "—" if r.simulated_power is None else f"{r.simulated_power * 100:.1f}%",
            "n/a" if r.cost_usd is None else f"${r.cost_usd:,.2f}",
            "n/a" if r.wall_s is None else f"{r.wall_s / 60:,.1f} min",
        )
    out = stdout_console()
    out.print(table)
    if mdd_line:
        out.print(mdd_line, highlight=False, soft_wrap=True)
    for warning in plan_warnings(base_rates, plan, suite_tasks):
        out.print(f"warning: {warning}", markup=False, highlight=False, soft_wrap=True)
    if subset:
        assert run is not None
        _print_subset([run, *(load_run(p) for p in pool)], subset)


def _print_subset(runs: list[RunData], n: int) -> None:
    """The ``n`` most informative tasks of ``runs`` (their respondents pooled; the first run's
    tasks are ranked), and the experiment lines that select them."""
    from rich.table import Table

    from dabench.stats.discrimination import most_informative, task_discrimination
    from dabench.stats.frame import build_frame

    out = stdout_console()
    frames = [build_frame(r) for r in runs]
    ranked = {ep.task_id for ep in frames[0].episodes}
    rows = [r for r in task_discrimination(frames) if r.task in ranked]
    top = most_informative(rows, n)
    total = sum(r.information for r in rows)
    pooled = f" (respondents of {len(runs)} runs)" if len(runs) > 1 else ""
    table = Table(title=f"the {len(top)} most informative of {len(rows)} tasks{pooled}")
    for col in ("task", "pass rate", "point-biserial", "information", "flag"):
        table.add_column(col, justify="left" if col in ("task", "flag") else "right")
    for r in top:
        table.add_row(
            r.task,
            f"{r.pass_rate * 100:.1f}%",
            "n/a" if r.point_biserial is None else f"{r.point_biserial:.2f}",
            f"{r.information:.3f}",
            r.flag.replace("_", " "),
        )
    out.print(table)
    if total <= 0:
        out.print(
            "no task separates this run's respondents (every task was passed by all or failed "
            "by all, or too few arm attempts to estimate): the ranking above is by task id",
            highlight=False,
            soft_wrap=True,
        )
    else:
        kept = sum(r.information for r in top) / total
        out.print(
            f"these {len(top)} tasks hold {kept:.0%} of the run's information per episode",
            highlight=False,
            soft_wrap=True,
        )
    if n > len(rows):
        out.print(f"asked for {n} tasks; the run has {len(rows)}", highlight=False)
    ids = ", ".join(r.task for r in top)
    out.print(
        f"experiment selection: tasks: {{tasks: [{ids}]}}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
