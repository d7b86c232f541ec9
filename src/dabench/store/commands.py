"""``dabench publish`` and the store side of ``dabench history``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dabench.defaults import DEFAULT_STORE
from dabench.errors import UserInputError
from dabench.listing import stderr_console, stdout_console

if TYPE_CHECKING:
    from dabench.store.open import ResultsStore

err = stderr_console()

STORE_HELP = f"Results store duckdb:PATH (default {DEFAULT_STORE})."
ES_HELP = "Publish to / read from Elasticsearch at this URL instead of a DuckDB file."


def publish_cmd(
    runs: list[Path] = typer.Argument(
        ..., help="Run directories to publish (other entries are skipped).", metavar="RUN..."
    ),
    store: str | None = typer.Option(None, "--store", metavar="duckdb:PATH", help=STORE_HELP),
    elasticsearch: str | None = typer.Option(None, "--elasticsearch", metavar="URL", help=ES_HELP),
    api_key: str | None = typer.Option(
        None, "--api-key", envvar="ES_API_KEY", metavar="KEY", help="Elasticsearch API key."
    ),
    prefix: str = typer.Option(
        "dabench-results-", "--prefix", metavar="TEXT", help="Elasticsearch index prefix."
    ),
) -> None:
    """Write runs (manifest, episodes with grades, per-arm statistics) into a results store.
    Publishing a run again replaces its rows: keys are (run, arm, task, attempt)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from dabench.store.collect import collect_run
    from dabench.store.open import open_store

    runs = run_dirs(runs)
    target, label = open_store(store, elasticsearch, api_key=api_key, prefix=prefix)
    out = stdout_console()
    with Progress(
        TextColumn("publish"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
        console=err, transient=True,
    ) as progress:  # fmt: skip
        bar = progress.add_task("", total=len(runs))
        for run_dir in runs:
            progress.update(bar, description=str(run_dir))
            stored = collect_run(run_dir)
            progress.advance(bar)
            if not stored.episodes:  # e.g. its target never started: kept, not published
                err.print(
                    f"skipped {run_dir}: no episodes (the run ended before its first one)",
                    markup=False, highlight=False, soft_wrap=True,
                )  # fmt: skip
                continue
            written = target.publish(stored)
            out.print(
                f"published {stored.run.run_id} -> {label}: {written['episodes']} episodes, "
                f"{written['arm_stats']} arm statistics"
            )


def run_dirs(paths: list[Path]) -> list[Path]:
    """The run directories (those with a ``manifest.json``) among ``paths``; each other entry
    (``runs/results.duckdb`` when the shell expands ``runs/*``...) is named on stderr and
    skipped. None left is an error."""
    kept = [p for p in paths if (p / "manifest.json").is_file()]
    for p in paths:
        if p not in kept:
            what = "does not exist" if not p.exists() else "not a run directory (no manifest.json)"
            err.print(f"skipped {p}: {what}", markup=False, highlight=False, soft_wrap=True)
    if not kept:
        raise UserInputError(f"nothing to publish: none of the {len(paths)} path(s) is a run")
    return kept


def print_store_history(target: ResultsStore, label: str, html: Path | None) -> None:
    """The trend table of a store on stdout (and the HTML page when asked)."""
    from rich.table import Table

    from dabench.store.html import write_history_html
    from dabench.store.trend import sparkline, trends

    out = stdout_console()
    series = trends(target.arm_stats())
    table = Table(title=f"history in {label}")
    for col in ("arm", "agent", "model", "target", "suite", "runs", "accuracy trend"):
        table.add_column(col, justify="right" if col == "runs" else "left", no_wrap=True)
    for col in ("latest accuracy [95% CI]", "latest pass^k", "change"):
        table.add_column(col, justify="right", no_wrap=True)
    for s in series:
        p = s.latest
        acc = "n/a" if p.accuracy is None else f"{p.accuracy * 100:.1f}%"
        if p.accuracy is not None and p.accuracy_low is not None and p.accuracy_high is not None:
            acc += f" [{p.accuracy_low * 100:.1f}, {p.accuracy_high * 100:.1f}]"
        phk = "n/a" if p.pass_hat_k is None else f"{p.pass_hat_k * 100:.1f}% (k {p.k})"
        change = s.change()
        table.add_row(
            s.arm, s.agent, s.model, s.target, s.suite, str(len(s.points)),
            sparkline(pt.accuracy for pt in s.points), acc, phk,
            "n/a" if change is None else f"{change * 100:+.1f} pts",
        )  # fmt: skip
    if not series:
        out.print(f"no runs published in {label} yet (dabench publish RUN_DIR)")
    else:
        out.print(table)
    if html is not None:
        path = write_history_html(series, html, source=label)
        err.print(f"wrote {path}")
