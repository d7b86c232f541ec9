"""``dabench run``: run an experiment (or the built-in smoke experiment), or resume a run."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from dabench.cli_values import comma_list
from dabench.errors import HarnessError, UserInputError
from dabench.listing import stderr_console

if TYPE_CHECKING:
    from dabench.runner.experiment import Experiment
    from dabench.runner.run import ExperimentRun, RunSummary

NO_MODEL_AGENTS = {
    "oracle": "answers from each task's gold SQL through the platform's tools; it checks "
    "tasks, audit and graders end to end",
    "probe": "answers a trap task with the gold SQL only when the platform surfaced the "
    "deciding fact (or through a metric of the target's metric role), else with the naive SQL; "
    "it measures retrieval, not a model",
    "replay": "plays recorded transcripts",
}
"""What each agent kind that calls no model does, for the end-of-run note."""

TO_RUN_A_MODEL = (
    "To run a model: dabench run --smoke --model anthropic:claude-sonnet-4-5 "
    "(with ANTHROPIC_API_KEY set). A local server needs no key: --model vllm:<model> "
    "(localhost:8000), ollama:<model> (localhost:11434), llamacpp:<model> (localhost:8080), "
    "or openai-compat:<model> (or openai:<model>) --base-url http://HOST:PORT/v1 for any "
    "other OpenAI-compatible server."
)


def fake_model_note(exp: Experiment) -> str | None:
    """The end-of-run note of a run with arms on the scripted ``fake`` provider, else ``None``."""
    arms = [a.name for a in exp.arms if str(a.agent.get("model", "")).split(":")[0] == "fake"]
    if not arms:
        return None
    return (
        f"no model used by {', '.join(arms)}: the fake provider's replies are scripted, so "
        f"the run measures the harness, not a model.\n{TO_RUN_A_MODEL}"
    )


def no_model_note(exp: Experiment) -> str:
    """The end-of-run note of a run whose agents call no model: which agents, what they do."""
    kinds = sorted({str(a.agent.get("kind")) for a in exp.arms})
    parts = [f"{kind} agent ({NO_MODEL_AGENTS.get(kind, 'no model')})" for kind in kinds]
    return f"no model used: {'; '.join(parts)}.\n{TO_RUN_A_MODEL}"


def _default_run_dir(exp: Experiment) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path("runs") / f"{stamp}-{exp.name}"


def _split(value: str | None, flag: str, expected: str) -> list[str] | None:
    """``a0, a2`` -> ``["a0", "a2"]``; ``None`` when not given; an empty item is an error."""
    return None if value is None else comma_list(value, flag, expected)


def _resolve(
    experiment: Path | None,
    smoke: bool,
    resume: Path | None,
    *,
    adhoc_arms: list[str] | None = None,
    adhoc: bool = False,
) -> tuple[Experiment, Path, Path | None]:
    """The experiment, the directory its relative paths resolve against, the run dir.

    Without a YAML, ``--smoke`` or ``--resume``, the run flags (``adhoc``) build one arm per
    named reference profile."""
    from dabench.journal.store import read_manifest
    from dabench.runner.experiment import (
        Experiment,
        adhoc_experiment,
        builtin_experiment,
        load_experiment,
    )

    if resume is not None:
        if experiment is not None or smoke:
            raise UserInputError("--resume RUN_DIR takes the experiment from the run's manifest")
        manifest = read_manifest(resume, with_secrets=True)
        exp = Experiment.model_validate(manifest.experiment)
        # The manifest holds the experiment with its paths made absolute.
        return exp, Path.cwd(), resume
    if experiment is not None and smoke:
        raise UserInputError("give either EXPERIMENT.yaml or --smoke, not both")
    if smoke:
        return builtin_experiment("smoke"), Path.cwd(), None
    if experiment is None and adhoc:
        return adhoc_experiment(adhoc_arms), Path.cwd(), None
    if experiment is None:
        raise UserInputError(
            "nothing to run: give EXPERIMENT.yaml, --smoke, --suite/--arms/--agent or "
            "--resume RUN_DIR"
        )
    return load_experiment(experiment), experiment.resolve().parent, None


def _post_run(run_dir: Path, console: Console, grade: bool) -> Any:
    """Grade and report when those packages provide their entry points; the report's
    result (``ReportFiles``) or ``None``."""
    if not grade:
        return None
    hooks = [
        ("grading", ("dabench.grading",), "grade_run"),
        ("report", ("dabench.report", "dabench.report.build"), "write_reports"),
    ]
    result: Any = None
    for label, modules, name in hooks:
        fn = _entry_point(modules, name)
        if fn is None:
            console.print(f"[dim]{label}: {modules[0]}.{name} is not available; skipped[/dim]")
            continue
        console.print(f"[dim]{label}...[/dim]")
        result = fn(run_dir)
    return result


def next_command(exp: Experiment, smoke: bool, experiment_file: Path | None = None) -> str:
    """The next command worth trying after a run of ``exp`` (of ``experiment_file``, when
    the run was of one: the same file with a model, rather than a built-in suite)."""
    kinds = {str(a.agent.get("kind")) for a in exp.arms}
    model = next((str(a.agent["model"]) for a in exp.arms if a.agent.get("model")), None)
    if experiment_file is not None and (model is None or exp.k < 3):
        with_model = f"dabench run {experiment_file} --model {model or 'PROVIDER:MODEL'} --k 3"
        why = "k >= 3 gives pass^k and tighter CIs" if model else "every arm's agent a model"
        return f"{with_model}  ({why})"
    if kinds <= {"oracle", "replay"}:
        return "dabench run --suite s3 --arms a0,a2 --agent probe --k 3"
    if kinds == {"probe"}:
        return (
            "dabench run --suite s3 --arms a0,a2 --model anthropic:claude-sonnet-4-5 --k 3  "
            "(needs ANTHROPIC_API_KEY)"
        )
    if exp.k < 3 and model is not None:
        flag = "--smoke" if smoke else "--suite s3 --arms a0,a2"
        return f"dabench run {flag} --model {model} --k 3  (k >= 3 gives pass^k and tighter CIs)"
    return "dabench history runs  (this run next to the earlier ones)"


def _print_closing(
    files: Any,
    run_dir: Path,
    exp: Experiment,
    smoke: bool,
    console: Console,
    experiment_file: Path | None = None,
) -> None:
    """The closing summary on stdout (plain text, so ``> log`` keeps it whole)."""
    from dabench.journal.sequential import read_sequential
    from dabench.report.summary import closing_summary  # the report package, when it ran

    if files is not None:
        paths = [files.markdown_path, files.html_path]
        lines = closing_summary(files.stats, paths, read_sequential(run_dir))
    else:
        lines = [f"run {run_dir}: not graded; grade and report with `dabench report {run_dir}`"]
    lines.append(f"next:   {next_command(exp, smoke, experiment_file)}")
    if console.is_terminal:
        console.print()
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def _entry_point(modules: tuple[str, ...], name: str) -> Callable[[Path], Any] | None:
    import importlib

    for module in modules:
        try:
            fn: Callable[[Path], Any] | None = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if fn is not None:
            return fn
    return None


def _print_summary(summary: RunSummary, console: Console) -> None:
    from rich.table import Table

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
    if summary.per_node:
        nodes = ", ".join(f"{node} {n}" for node, n in sorted(summary.per_node.items()))
        lost = summary.requeued
        console.print(
            f"episodes per node: {nodes}; re-queued after a lost node: {lost}", soft_wrap=True
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
    experiment: Path | None = typer.Argument(
        None,
        help="Experiment YAML (or use --smoke, or --suite/--arms/--agent without a YAML).",
        show_default=False,
        metavar="EXPERIMENT.yaml",
    ),
    smoke: bool = typer.Option(False, "--smoke", help="Run the built-in smoke experiment."),
    suite: str | None = typer.Option(
        None,
        "--suite",
        metavar="S1,S2..",
        help="Only these suites, e.g. s3 or s1,s3 (without a YAML: arms a0..a3 of the "
        "reference platform).",
    ),
    arms: str | None = typer.Option(
        None, "--arms", metavar="ARM,ARM..", help="Only these arms, e.g. a0,a2."
    ),
    agent: str | None = typer.Option(
        None,
        "--agent",
        metavar="oracle|probe|replay|llm",
        help="Every arm uses this agent kind (llm needs --model; default oracle).",
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        metavar="PROVIDER:MODEL",
        help="Every arm uses the LLM agent with this model, e.g. anthropic:claude-sonnet-4-5.",
    ),
    k: int | None = typer.Option(
        None, "--k", min=1, metavar="INT", help="Attempts per task (overrides the YAML's k)."
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", metavar="URL", help="Provider base URL (OpenAI-compatible servers)."
    ),
    out: Path | None = typer.Option(
        None, "--out", metavar="DIR", help="Run directory (default runs/<timestamp>-<name>)."
    ),
    resume: Path | None = typer.Option(
        None, "--resume", metavar="RUN_DIR", help="Resume this run directory."
    ),
    world: Path | None = typer.Option(
        None, "--world", metavar="DIR", help="A built world directory (default: the cache)."
    ),
    world_seed: str | None = typer.Option(
        None,
        "--world-seed",
        metavar="random|INT",
        help="Build a fresh built-in world from this seed ('random': drawn, then recorded in "
        "the manifest and report) and lock every task on it.",
    ),
    concurrency: int | None = typer.Option(
        None, "--concurrency", min=1, metavar="INT", help="Episodes in flight at once."
    ),
    allow_audit_gaps: bool = typer.Option(
        False, "--allow-audit-gaps", help="Exit 0 even when audit rows disagree."
    ),
    grade: bool = typer.Option(True, "--grade/--no-grade", help="Grade and report after the run."),
    progress: bool = typer.Option(
        True, "--progress/--no-progress", help="Show the progress bar (on stderr)."
    ),
    executor: str | None = typer.Option(
        None, "--executor", metavar="local|ray", help="Where episodes run (default: the YAML's)."
    ),
    ray_address: str | None = typer.Option(
        None, "--ray-address", metavar="HOST:PORT", help="Ray cluster to use (--executor ray)."
    ),
    until_decided: bool = typer.Option(
        False,
        "--until-decided",
        help="Run in rounds; stop each arm once its delta vs the first arm is decided "
        "(k = the most rounds).",
    ),
    min_delta: float | None = typer.Option(
        None,
        "--min-delta",
        min=0.0,
        max=1.0,
        metavar="D",
        help="With --until-decided: a delta inside ±D also decides (equivalent), e.g. 0.05.",
    ),
    alpha: float = typer.Option(
        0.05, "--alpha", min=0.0001, max=0.5, metavar="A", help="With --until-decided: error level."
    ),
    unsealed: bool = typer.Option(
        False,
        "--unsealed",
        help="Run agent programs (command, claude-cli) without the bubblewrap sandbox; the "
        "manifest and every report carry a caveat.",
    ),
) -> None:
    """Run an experiment's arms over its tasks k times; journal, audit-check, grade, report."""
    import asyncio

    from dabench.runner.experiment import apply_overrides

    console = stderr_console()
    if resume is not None:
        changed = [
            flag
            for flag, value in (
                ("--k", k), ("--arms", arms), ("--model", model), ("--base-url", base_url),
                ("--world", world), ("--out", out), ("--suite", suite), ("--agent", agent),
                ("--world-seed", world_seed),
                ("--unsealed", True if unsealed else None),
            )
            if value is not None
        ]  # fmt: skip
        if changed:
            raise UserInputError(
                f"--resume continues the run as it was started; {', '.join(changed)} would "
                "change it (start a new run instead)"
            )
    if out is not None and not out.is_dir() and (out.exists() or out.is_symlink()):
        raise UserInputError(f"--out {out}: exists and is not a directory")
    arm_list = _split(arms, "--arms", "arm names, e.g. a0,a2")
    adhoc = suite is not None or agent is not None or arm_list is not None or model is not None
    exp, exp_dir, run_dir = _resolve(experiment, smoke, resume, adhoc_arms=arm_list, adhoc=adhoc)
    exp = apply_overrides(
        exp,
        k=k,
        arms=arm_list,
        suites=_split(suite, "--suite", "suites, e.g. s1,s3"),
        agent=agent,
        model=model,
        base_url=base_url,
        concurrency=concurrency,
        world_dir=str(world.resolve()) if world else None,
        allow_audit_gaps=allow_audit_gaps,
    )
    if unsealed:
        exp = exp.model_copy(update={"unsealed": True})
    if world_seed is not None:
        exp = _with_world_seed(exp, exp_dir, world_seed, console)
    if resume is None:
        run_dir = out or _default_run_dir(exp)
    assert run_dir is not None
    from dabench.runner.run import ExperimentRun  # heavy (MCP SDK): imported when running

    if executor not in (None, "local", "ray"):
        raise UserInputError(f"--executor {executor}: expected local or ray")
    if executor is not None or ray_address is not None:  # where it runs; not in its hash
        ray_spec = exp.ray.model_copy(update={"address": ray_address or exp.ray.address})
        exp = exp.model_copy(update={"executor": executor or exp.executor, "ray": ray_spec})
    execution = ExperimentRun(
        exp, run_dir, experiment_dir=exp_dir, resume=resume is not None, console=console,
        progress=progress,
    )  # fmt: skip
    if min_delta is not None and not until_decided:
        raise UserInputError("--min-delta needs --until-decided")
    try:
        if until_decided:
            summary = asyncio.run(
                _until_decided(
                    exp,
                    run_dir,
                    exp_dir,
                    resume is not None,
                    console,
                    progress,
                    alpha=alpha,
                    min_delta=min_delta,
                )
            )
        else:
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
    files = None
    if summary.finished or summary.already_done:
        files = _post_run(run_dir, console, grade)
    note = no_model_note(exp) if summary.no_model else fake_model_note(exp)
    if note is not None:
        console.print(f"[bold]{note}[/bold]", soft_wrap=True)
    _print_closing(files, run_dir, exp, smoke, console, experiment)
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


def _with_world_seed(exp: Experiment, exp_dir: Path, value: str, console: Console) -> Experiment:
    """The experiment on the built-in world of ``--world-seed`` (``random``: drawn, built and
    checked now, and marked ``world.drawn``; a named seed's static task issues are warnings)."""
    from dabench.runner.run import load_task_set
    from dabench.runner.world_seed import draw_world_seed, parse_world_seed, world_issues
    from dabench.world.cache import ensure_world, world_cache_dir

    if exp.world.dir:
        raise UserInputError(
            f"--world-seed builds a world, but the run already names one ({exp.world.dir}); "
            "give either --world-seed or --world / world.dir"
        )
    if exp.lock:
        raise UserInputError(
            f"--world-seed locks every task on the new world; the experiment's lock {exp.lock} "
            "pins another world (remove `lock:`)"
        )
    seed = parse_world_seed(value)
    drawn = seed is None
    tasks = load_task_set(exp, exp_dir)

    def say(text: str) -> None:
        console.print(text, markup=False, highlight=False, soft_wrap=True)

    if seed is None:
        seed = draw_world_seed(exp.world.scale, tasks, say=say)
    else:
        path = ensure_world(seed, exp.world.scale, world_cache_dir())
        for issue in world_issues(path, tasks):
            say(f"warning: world seed {seed}: {issue}")
    say(
        f"world seed {seed}{' (drawn at random)' if drawn else ''}, scale {exp.world.scale}: "
        f"repeat this world with --world-seed {seed}"
    )
    world = exp.world.model_copy(update={"seed": seed, "drawn": drawn})
    return exp.model_copy(update={"world": world})


async def _until_decided(
    exp: Experiment, run_dir: Path, exp_dir: Path, resume: bool, console: Console,
    progress: bool, *, alpha: float, min_delta: float | None,
) -> RunSummary:  # fmt: skip
    """``--until-decided``: rounds, each graded, each arm stopped once decided."""
    from dabench.runner.until_decided import run_until_decided

    grade = _entry_point(("dabench.grading.run",), "agrade_run")
    if grade is None:
        raise UserInputError("--until-decided needs the grading package (dabench.grading)")
    return await run_until_decided(
        exp, run_dir, experiment_dir=exp_dir, resume=resume, console=console,
        progress=progress, grade=grade, alpha=alpha, min_delta=min_delta, execute=_main,
    )  # fmt: skip


async def _main(execution: ExperimentRun) -> RunSummary:
    """Run with SIGTERM turned into cancellation, so targets are always stopped."""
    import asyncio
    import contextlib
    import signal

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    if task is not None:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, task.cancel)
    return await execution.execute()
