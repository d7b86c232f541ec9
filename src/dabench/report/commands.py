"""``dabench report``, ``dabench compare`` and ``dabench history``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from dabench.defaults import DEFAULT_RESAMPLES, DEFAULT_SEED, MAX_TRANSCRIPTS
from dabench.listing import FORMAT_OPTION, Column, ListFormat, emit_rows, stdout_console

if TYPE_CHECKING:
    from dabench.stats.gate import GateResult


def report(
    run_dir: Path = typer.Argument(..., help="The run directory."),
    baseline_arm: str | None = typer.Option(
        None, "--baseline-arm", help="Arm the deltas compare against (default: the first arm)."
    ),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Bootstrap seed."),
    resamples: int = typer.Option(
        DEFAULT_RESAMPLES, "--resamples", min=0, help="Bootstrap resamples (0: no CIs)."
    ),
    max_transcripts: int = typer.Option(
        MAX_TRANSCRIPTS, "--max-transcripts", min=0, help="Episodes whose transcript is embedded."
    ),
) -> None:
    """Write stats.json, report.md and report.html into RUN_DIR."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from dabench.report.build import write_reports
    from dabench.report.fmt import pct

    require_episodes(run_dir)
    console = stdout_console()
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("report", total=None)
        files = write_reports(
            run_dir,
            baseline_arm=baseline_arm,
            seed=seed,
            resamples=resamples,
            max_transcripts=max_transcripts,
            progress=lambda msg: progress.update(task, description=msg),
        )
    table = Table(title=f"run {files.stats.run_id}", show_lines=False)
    for col in ("arm", "accuracy [95% CI]", f"pass^{files.stats.k}", "score", "episodes"):
        table.add_column(col, justify="left" if col == "arm" else "right")
    for arm in files.stats.arms:
        g = files.stats.group(arm, "overall")
        if g is None:
            continue
        acc = pct(g.accuracy.estimate)
        if g.accuracy.low is not None and g.accuracy.high is not None:
            acc += f" [{100 * g.accuracy.low:.1f}, {100 * g.accuracy.high:.1f}]"
        table.add_row(
            arm, acc, pct(g.pass_hat_k.estimate), pct(g.score.estimate), str(g.n_episodes)
        )
    console.print(table)
    for path in (files.stats_path, files.markdown_path, files.html_path):
        console.print(f"wrote {path}")


def require_episodes(run_dir: Path) -> None:
    """A run directory with a manifest and at least one journaled episode, else an error
    (a run stopped before its first episode has nothing to report)."""
    from dabench.errors import UserInputError
    from dabench.journal.store import Journal, read_manifest

    if not run_dir.is_dir():
        raise UserInputError(f"{run_dir}: not a directory (expected a run directory)")
    read_manifest(run_dir)
    journal = Journal(run_dir).path
    if not journal.is_file() or journal.stat().st_size == 0:
        raise UserInputError(
            f"{run_dir}: no episodes in its journal (the run stopped before its first episode); "
            f"nothing to report. Continue it with `dabench run --resume {run_dir}`"
        )


def _pts(value: float | None) -> str:
    from dabench.report.fmt import NA

    return NA if value is None else f"{value:.1f}"


def _print_gate(result: GateResult, console: Console) -> None:
    from rich.table import Table

    from dabench.report.fmt import NA

    table = Table(title=f"{result.run_id} vs baseline {result.baseline_run_id}")
    columns = (
        "arm",
        "suite",
        "accuracy",
        "drop",
        "Δ 95% CI",
        "pass^k",
        "drop",
        "calls ×",
        "enrich ×",
        "verdict",
    )
    for col in columns:
        table.add_column(col, justify="left" if col in ("arm", "suite", "verdict") else "right")
    for r in result.rows:
        ci = (
            f"[{r.accuracy_delta_low:+.1f}, {r.accuracy_delta_high:+.1f}]"
            if r.accuracy_delta_low is not None and r.accuracy_delta_high is not None
            else NA
        )
        table.add_row(
            r.arm,
            r.suite,
            f"{_pts(r.baseline_accuracy)} → {_pts(r.accuracy)}",
            _pts(r.accuracy_drop),
            ci,
            f"{_pts(r.baseline_pass_hat_k)} → {_pts(r.pass_hat_k)}",
            _pts(r.pass_hat_k_drop),
            NA if r.tool_call_ratio is None else f"{r.tool_call_ratio:.2f}",
            NA if r.enrichment_ratio is None else f"{r.enrichment_ratio:.2f}",
            "[bold red]REGRESSION[/]" if r.regressions else "[green]ok[/]",
        )
    console.print(table)
    console.print(
        "accuracy and pass^k in %, drops in points (baseline - run), Δ CI paired over tasks"
    )
    for r in result.rows:
        for reason in r.regressions:
            console.print(f"[red]✗[/] {r.arm} / {r.suite}: {reason}")
    for w in result.problems:
        console.print(f"[yellow]forced despite:[/] {w}")
    for w in result.warnings:
        console.print(f"[yellow]note:[/] {w}")


def compare(
    run_dir: Path = typer.Argument(..., help="The candidate run directory."),
    baseline: Path = typer.Option(..., "--baseline", help="The baseline run directory."),
    thresholds: Path | None = typer.Option(
        None, "--thresholds", help="Thresholds YAML (default: the packaged thresholds.yaml)."
    ),
    force: bool = typer.Option(
        False, "--force", help="Compare even when arms, task sets or worlds differ."
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the result as JSON."),
) -> None:
    """Regression gate: exit 1 when RUN_DIR regressed against the baseline run, else 0."""
    from dabench.stats import load_run
    from dabench.stats.gate import compare_runs, load_thresholds

    console = stdout_console()
    limits = load_thresholds(thresholds)
    result = compare_runs(load_run(run_dir), load_run(baseline), limits, force=force)
    _print_gate(result, console)
    if json_out is not None:
        payload = result.model_dump(mode="json") | {"regressed": result.regressed}
        json_out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    if result.regressed:
        console.print("[bold red]regression[/]: the gate fails")
        raise typer.Exit(1)
    console.print("[green]no regression[/]")


def history_cmd(
    root: Path = typer.Argument(
        Path("runs"), help="A directory holding run directories.", metavar="DIR"
    ),
    fmt: ListFormat = FORMAT_OPTION,
    store: str | None = typer.Option(
        None,
        "--store",
        metavar="duckdb:PATH",
        help="Answer across the runs published in this results store (dabench publish).",
    ),
    elasticsearch: str | None = typer.Option(
        None, "--elasticsearch", metavar="URL", help="Read the results store in Elasticsearch."
    ),
    api_key: str | None = typer.Option(
        None, "--api-key", envvar="ES_API_KEY", metavar="KEY", help="Elasticsearch API key."
    ),
    html: Path | None = typer.Option(
        None, "--html", metavar="FILE", help="With a store: also write the trends as HTML."
    ),
) -> None:
    """List the runs under DIR (default ./runs) with their headline numbers; with --store or
    --elasticsearch, the trends of accuracy and pass^k per arm, model and suite across
    published runs."""
    from dabench.report.fmt import num, pct, usd
    from dabench.report.history import history
    from dabench.store.commands import print_store_history
    from dabench.store.open import open_store

    if store or elasticsearch:
        target, label = open_store(store, elasticsearch, api_key=api_key)
        print_store_history(target, label, html)
        return
    rows = history(root)
    columns = [
        Column("started", "started_at"),
        Column("run", "run_id"),
        Column("k", "k", right=True),
        Column("tasks", "tasks", right=True),
        Column("arm", "arm"),
        Column("agent", "agent"),
        Column("model", "model"),
        Column("target", "target"),
        Column("episodes", "episodes", right=True),
        Column("graded", "graded", right=True),
        Column("accuracy", "accuracy", pct, right=True),
        Column("pass^k", "pass_hat_k", pct, right=True),
        Column("score", "score", pct, right=True),
        Column("calls med", "tool_calls_median", num, right=True),
        Column("cost", "cost_total_usd", usd, right=True),
        Column("note", "note"),
        Column("dir", "run_dir"),
    ]
    footer = None if rows else f"no run directories (with manifest.json) under {root}"
    emit_rows(
        columns,
        [r.model_dump() for r in rows],
        fmt,
        title=f"runs under {root}",
        footer=footer,
    )


def register(app: typer.Typer) -> None:
    """Mount ``report``, ``compare`` and ``history`` on the root app."""
    app.command("report")(report)
    app.command("compare")(compare)
    app.command("history")(history_cmd)
