"""``dabench run``: run an experiment (or the built-in smoke experiment), or resume a run."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import signal
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from dabench.errors import HarnessError, UserInputError
from dabench.journal.store import read_manifest
from dabench.runner.experiment import (
    Experiment,
    apply_overrides,
    builtin_experiment,
    load_experiment,
)

if TYPE_CHECKING:
    from dabench.runner.run import ExperimentRun, RunSummary

NO_MODEL_AGENTS = {
    "oracle": "answers from each task's gold SQL through the platform's tools; it checks "
    "tasks, audit and graders end to end",
    "probe": "answers a trap task with the gold SQL only when the platform surfaced the "
    "deciding fact, else with the naive SQL; it measures retrieval, not a model",
    "replay": "plays recorded transcripts",
}
"""What each agent kind that calls no model does, for the end-of-run note."""

TO_RUN_A_MODEL = (
    "To run a model: dabench run --smoke --model anthropic:claude-sonnet-4-5 "
    "(with ANTHROPIC_API_KEY set), or --model openai:<model> --base-url "
    "http://localhost:8000/v1 for any OpenAI-compatible server (vLLM, Ollama, llama.cpp)."
)


def no_model_note(exp: Experiment) -> str:
    """The end-of-run note of a run whose agents call no model: which agents, what they do."""
    kinds = sorted({str(a.agent.get("kind")) for a in exp.arms})
    parts = [f"{kind} agent ({NO_MODEL_AGENTS.get(kind, 'no model')})" for kind in kinds]
    return f"no model used: {'; '.join(parts)}.\n{TO_RUN_A_MODEL}"


def _default_run_dir(exp: Experiment) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path("runs") / f"{stamp}-{exp.name}"


def _resolve(
    experiment: Path | None, smoke: bool, resume: Path | None
) -> tuple[Experiment, Path, Path | None]:
    """The experiment, the directory its relative paths resolve against, the run dir."""
    if resume is not None:
        if experiment is not None or smoke:
            raise UserInputError("--resume RUN_DIR takes the experiment from the run's manifest")
        manifest = read_manifest(resume)
        exp = Experiment.model_validate(manifest.experiment)
        # The manifest holds the experiment with its paths made absolute.
        return exp, Path.cwd(), resume
    if experiment is not None and smoke:
        raise UserInputError("give either EXPERIMENT.yaml or --smoke, not both")
    if smoke:
        return builtin_experiment("smoke"), Path.cwd(), None
    if experiment is None:
        raise UserInputError("nothing to run: give EXPERIMENT.yaml, --smoke or --resume RUN_DIR")
    return load_experiment(experiment), experiment.resolve().parent, None


def _post_run(run_dir: Path, console: Console, grade: bool) -> None:
    """Grade and report when those packages provide their entry points."""
    if not grade:
        return
    hooks = [
        ("grading", ("dabench.grading",), "grade_run"),
        ("report", ("dabench.report", "dabench.report.build"), "write_reports"),
    ]
    for label, modules, name in hooks:
        fn = _entry_point(modules, name)
        if fn is None:
            console.print(f"[dim]{label}: {modules[0]}.{name} is not available; skipped[/dim]")
            continue
        fn(run_dir)
        console.print(f"{label}: done")


def _entry_point(modules: tuple[str, ...], name: str) -> Callable[[Path], Any] | None:
    for module in modules:
        try:
            fn: Callable[[Path], Any] | None = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if fn is not None:
            return fn
    return None


def _print_summary(summary: RunSummary, console: Console) -> None:
    table = Table("arm", "episodes", "completed", "other", "harness errors", title="episodes")
    for arm, counts in sorted(summary.per_arm.items()):
        total = sum(counts.values())
        other = total - counts["completed"] - counts["harness_error"]
        table.add_row(
            arm, str(total), str(counts["completed"]), str(other), str(counts["harness_error"])
        )
    if summary.per_arm:
        console.print(table)
    console.print(
        f"run {summary.run_dir}: {summary.finished} episode(s) run, "
        f"{summary.already_done} already in the journal"
    )
    for item in summary.skipped_protocols:
        console.print(
            f"[yellow]skipped protocol {item}: no S5 protocol runner is installed[/yellow]"
        )
    for err in summary.harness_errors[:10]:
        console.print(f"[yellow]harness error[/yellow] {err}")
    for gap in summary.audit_gaps[:10]:
        console.print(f"[red]audit gap[/red] {gap}")


def run(
    experiment: Path | None = typer.Argument(None, help="Experiment YAML.", show_default=False),
    smoke: bool = typer.Option(False, "--smoke", help="Run the built-in smoke experiment."),
    k: int | None = typer.Option(None, "--k", min=1, help="Attempts per task (overrides k)."),
    arms: str | None = typer.Option(None, "--arms", help="Only these arms, e.g. a0,a2."),
    model: str | None = typer.Option(
        None, "--model", help="PROVIDER:MODEL; every arm uses the LLM agent with it."
    ),
    base_url: str | None = typer.Option(None, "--base-url", help="Provider base URL."),
    out: Path | None = typer.Option(None, "--out", help="Run directory (default runs/<ts>-<name>)"),
    resume: Path | None = typer.Option(None, "--resume", help="Resume this run directory."),
    world: Path | None = typer.Option(None, "--world", help="A built world directory."),
    concurrency: int | None = typer.Option(None, "--concurrency", min=1),
    allow_audit_gaps: bool = typer.Option(
        False, "--allow-audit-gaps", help="Exit 0 even when audit rows disagree."
    ),
    grade: bool = typer.Option(True, "--grade/--no-grade", help="Grade and report after the run."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Run an experiment's arms over its tasks k times; journal, audit-check, grade, report."""
    console = Console(stderr=True)
    if resume is not None:
        changed = [
            flag
            for flag, value in (
                ("--k", k), ("--arms", arms), ("--model", model), ("--base-url", base_url),
                ("--world", world), ("--out", out),
            )
            if value is not None
        ]  # fmt: skip
        if changed:
            raise UserInputError(
                f"--resume continues the run as it was started; {', '.join(changed)} would "
                "change it (start a new run instead)"
            )
    exp, exp_dir, run_dir = _resolve(experiment, smoke, resume)
    exp = apply_overrides(
        exp,
        k=k,
        arms=[a.strip() for a in arms.split(",") if a.strip()] if arms else None,
        model=model,
        base_url=base_url,
        concurrency=concurrency,
        world_dir=str(world.resolve()) if world else None,
        allow_audit_gaps=allow_audit_gaps,
    )
    if resume is None:
        run_dir = out or _default_run_dir(exp)
    assert run_dir is not None
    from dabench.runner.run import ExperimentRun  # heavy (MCP SDK): imported when running

    execution = ExperimentRun(
        exp, run_dir, experiment_dir=exp_dir, resume=resume is not None, console=console,
        progress=progress,
    )  # fmt: skip
    try:
        summary = asyncio.run(_main(execution))
    except (KeyboardInterrupt, asyncio.CancelledError):
        console.print(
            f"[yellow]interrupted: finished episodes are in the journal; continue with "
            f"`dabench run --resume {run_dir}`[/yellow]",
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    except HarnessError as exc:  # a target that did not start: infrastructure, not bad input
        console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(3) from None
    _print_summary(summary, console)
    if summary.finished or summary.already_done:
        _post_run(run_dir, console, grade)
    if summary.no_model:
        console.print(f"[bold]{no_model_note(exp)}[/bold]", soft_wrap=True)
    if summary.audit_gaps and not exp.allow_audit_gaps:
        console.print(
            f"[red]{len(summary.audit_gaps)} episode(s) with audit gaps; failing the run "
            "(use --allow-audit-gaps to accept)[/red]"
        )
        raise typer.Exit(1)
    if summary.harness_errors:
        console.print(
            f"[yellow]{len(summary.harness_errors)} episode(s) ended in a harness error "
            "(excluded from grading); exit code 3[/yellow]"
        )
        raise typer.Exit(3)


async def _main(execution: ExperimentRun) -> RunSummary:
    """Run with SIGTERM turned into cancellation, so targets are always stopped."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    if task is not None:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
    return await execution.execute()
