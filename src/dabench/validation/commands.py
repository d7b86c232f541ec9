"""``dabench tasks validate``: the command (registered on the ``tasks`` group by the CLI).

It lives above runner, agents and stats (it runs the oracle through the real runner), so the
``tasks`` package below them never imports it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dabench.errors import UserInputError
from dabench.listing import stderr_console, stdout_console
from dabench.tasks.commands import TASK_PATHS, load_task_paths

if TYPE_CHECKING:
    from dabench.tasks.loader import TaskSet


def validate_cmd(
    world: Path | None = typer.Option(
        None, "--world", metavar="DIR", help="A built world directory (default: the cache)."
    ),
    tasks: list[Path] | None = TASK_PATHS,
    arms: str = typer.Option("a0,a1,a2,a3", "--arms", help="Reference-platform profiles."),
    suite: list[str] = typer.Option([], "--suite", help="Only these suites (s1..s6)."),
    smoke: bool = typer.Option(False, "--smoke", help="Only the smoke subset."),
    run_dir: Path | None = typer.Option(None, "--run-dir", help="Keep the oracle's run here."),
    concurrency: int = typer.Option(
        4, "--concurrency", min=1, help="Oracle episodes in flight at once."
    ),
    warehouse: str | None = typer.Option(
        None,
        "--warehouse",
        metavar="DSN|FILE|DIR",
        help="Instead: recompute every truth on this exported warehouse (PostgreSQL DSN, "
        "DuckDB or SQLite file, or Parquet directory) and compare it with the world's; for a "
        "dbt project (world export --dbt), MetricFlow's answer on every metric-expressible "
        "task and the metric map's coverage.",
    ),
    platform_warehouse: str | None = typer.Option(
        None,
        "--platform-warehouse",
        metavar="DSN",
        help="Serve the oracle's platforms from this PostgreSQL warehouse (a read-only role; "
        "platform serve --warehouse).",
    ),
    margins_only: bool = typer.Option(
        False,
        "--margins",
        help="Instead: print the tolerance margins of every numeric task as a markdown table "
        "(docs/suites.md) and its tolerance issues; no oracle run.",
    ),
    qa: Path | None = typer.Option(
        None,
        "--qa",
        metavar="FILE",
        help="Instead: report a task-QA file written by `dabench play --qa` (task_qa.json).",
    ),
) -> None:
    """Run the oracle over every task on every arm it applies to; check gold, graders, traps'
    naive answers, entity ids and duplicates. Exits 1 on any failure."""
    from dabench.tasks.selection import TaskSelection, select_tasks, suite_names
    from dabench.validation.tasks import default_world, render_report, validate

    selection = TaskSelection(suites=suite_names(suite), smoke=smoke)
    loaded = load_task_paths(tasks)
    ts = select_tasks(loaded, selection)
    if warehouse is not None and (Path(warehouse) / "dbt_project.yml").is_file():
        from dabench.tasks.metric_parity_command import report_parity

        if not report_parity(Path(warehouse), world, ts.tasks, loaded.tasks):
            raise typer.Exit(1)
        return
    if warehouse is not None:
        _validate_warehouse(ts, world or default_world(), warehouse)
        return
    if qa is not None:
        _report_qa(ts, qa)
        return
    if margins_only:
        _report_margins(ts, world or default_world())
        return
    arm_list = [a.strip() for a in arms.split(",") if a.strip()]
    report = validate(
        world or default_world(), ts, arms=arm_list, run_dir=run_dir, concurrency=concurrency,
        warehouse=platform_warehouse,
    )  # fmt: skip
    render_report(report, ts, stdout_console())
    if not report.ok:
        raise typer.Exit(1)


def _validate_warehouse(ts: TaskSet, world: Path, where: str) -> None:
    """``tasks validate --warehouse``: the lock recomputed on an exported warehouse."""
    from dabench.tasks.engines import check_warehouse, open_engine
    from dabench.tasks.lock import compute_lock

    lock = compute_lock(ts, world)
    engine = open_engine(where)
    try:
        report = check_warehouse(ts, lock, engine)
    finally:
        engine.close()
    console = stdout_console()
    for problem in report.problems:
        console.print(f"mismatch: {problem}", markup=False, highlight=False, soft_wrap=True)
    verdict = "ok" if report.ok else f"{len(report.problems)} mismatches"
    console.print(
        f"{verdict}: {report.checked} truths recomputed on {report.engine} "
        f"(world {lock.world_hash[:12]})",
        markup=False,
        highlight=False,
    )
    if not report.ok:
        raise typer.Exit(1)


def _report_margins(ts: TaskSet, world: Path) -> None:
    """``tasks validate --margins``: the tolerance margins table and its issues."""
    from dabench.tasks.lock import compute_lock
    from dabench.validation.tolerance import (
        coincidence_notes,
        margins,
        margins_markdown,
        tolerance_issues,
    )

    found = margins(ts, compute_lock(ts, world), world)
    issues = tolerance_issues(found)
    print(margins_markdown(found))
    console = stderr_console()
    for item, detail in issues:
        console.print(f"tolerance {item}: {detail}", markup=False, highlight=False, soft_wrap=True)
    for item, detail in coincidence_notes(found):
        console.print(f"note {item}: {detail}", markup=False, highlight=False, soft_wrap=True)
    console.print(
        f"{len(found)} numeric truths, {len(issues)} tolerance issue(s)", markup=False,
        highlight=False,
    )  # fmt: skip
    if issues:
        raise typer.Exit(1)


def _report_qa(ts: TaskSet, path: Path) -> None:
    """``tasks validate --qa``: what people said about each task's prompt while playing it."""
    from rich.table import Table

    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UserInputError(f"--qa {path}: not a task-QA file ({exc})") from exc
    if not isinstance(entries, list):
        raise UserInputError(f"--qa {path}: expected a list of QA entries")
    table = Table(title=f"task QA from {path}")
    for col in ("task", "clear", "answerable", "note"):
        table.add_column(col, no_wrap=col == "task")
    flagged = 0
    for e in entries:
        if not isinstance(e, dict):
            raise UserInputError(f"--qa {path}: an entry is not an object: {e!r}")
        ok = bool(e.get("clear")) and bool(e.get("answerable"))
        flagged += not ok
        task = str(e.get("task_id") or "?")
        known = "" if task in ts.sources else " (not in this task set)"
        table.add_row(task + known, "yes" if e.get("clear") else "NO",
                      "yes" if e.get("answerable") else "NO", str(e.get("note") or ""))  # fmt: skip
    console = stdout_console()
    console.print(table)
    console.print(f"{len(entries)} QA answers, {flagged} task(s) flagged unclear or unanswerable")
