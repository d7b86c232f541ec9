"""``dabench tasks metric-parity DIR``: MetricFlow's answer against the gold for every
metric-expressible task, and the mapping's coverage per suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dabench.errors import UserInputError
from dabench.listing import stdout_console

if TYPE_CHECKING:
    from dabench.tasks.model import Task


def metric_parity_command(
    project: Path = typer.Argument(..., metavar="DIR", help="A project from world export --dbt."),
    world_dir: Path | None = typer.Option(
        None, "--world", metavar="DIR", help="The world it was exported from (default: cache)."
    ),
    task_ids: list[str] | None = typer.Option(
        None, "--task", metavar="ID", help="Only this task (repeatable); default: all mapped."
    ),
    fmt: str = typer.Option("table", "--format", help="table or json."),
) -> None:
    """Run every metric-expressible task's MetricFlow query (one process) and compare its
    answer with the gold; exit 1 when one differs or fails."""
    from dabench.tasks.loader import load_builtin_tasks
    from dabench.tasks.metric_parity import METRIC_QUERIES

    if fmt not in ("table", "json"):
        raise UserInputError(f"--format must be table or json, got {fmt!r}")
    tasks = load_builtin_tasks().tasks
    unknown = sorted(set(task_ids or ()) - set(METRIC_QUERIES))
    if unknown:
        raise UserInputError(f"--task {', '.join(unknown)}: not a metric-expressible task")
    chosen = [t for t in tasks if not task_ids or t.id in task_ids]
    if not report_parity(project, world_dir, chosen, tasks, fmt=fmt):
        raise typer.Exit(1)


def report_parity(
    project: Path,
    world_dir: Path | None,
    chosen: list[Task],
    tasks: list[Task],
    *,
    fmt: str = "table",
) -> bool:
    """Print MetricFlow's answer against the gold for every mapped task of ``chosen`` and the
    map's coverage of ``tasks`` per suite (``tasks metric-parity`` and ``tasks validate
    --warehouse DIR``); True when every answer equals the gold."""
    from dabench.tasks.metric_parity import coverage, parity
    from dabench.world.cache import default_world
    from dabench.world.load import load_world

    if not (project / "dbt_project.yml").is_file():
        raise UserInputError(f"{project}: no dbt_project.yml (make one with world export --dbt)")
    rows = parity(load_world(world_dir or default_world()), project, chosen)
    cover = coverage(tasks)
    out = stdout_console()
    if fmt == "json":
        body = {
            "coverage": {s: {"mapped": m, "tasks": n} for s, (m, n) in cover.items()},
            "tasks": [
                {"task": r.task_id, "query": r.query.canonical(), "gold": str(r.gold),
                 "metricflow": None if r.answer is None else str(r.answer),
                 "passed": r.passed, "error": r.error}
                for r in rows
            ],
        }  # fmt: skip
        out.print_json(json.dumps(body))
    else:
        for r in rows:
            mark = "ok  " if r.passed else "FAIL"
            shown = r.error or f"gold {r.gold} metricflow {r.answer}"
            out.print(
                f"{mark} {r.task_id}: {', '.join(r.query.metrics)} -> {shown}",
                markup=False, highlight=False, soft_wrap=True,
            )  # fmt: skip
        for suite, (mapped, total) in cover.items():
            out.print(
                f"coverage {suite}: {mapped}/{total} tasks metric-expressible", highlight=False
            )
        passed = sum(r.passed for r in rows)
        out.print(f"parity: {passed}/{len(rows)} equal the gold", highlight=False)
    return all(r.passed for r in rows)
