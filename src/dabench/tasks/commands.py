"""``dabench tasks ...``: the task schema, listing, and the truth lock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dabench.listing import FORMAT_OPTION, Column, ListFormat, emit_rows

if TYPE_CHECKING:
    from dabench.tasks.loader import TaskSet

app = typer.Typer(no_args_is_help=True)

TASK_PATHS = typer.Option(
    None,
    "--tasks",
    metavar="PATH",
    help="A task file or folder, repeatable (default: the built-in suites).",
)


def suite_file_schema() -> dict[str, object]:
    """JSON Schema of a suite file: a list of tasks and protocols."""
    from pydantic import TypeAdapter

    from dabench.tasks.model import Protocol, Task

    schema = TypeAdapter(list[Task | Protocol]).json_schema()
    schema["title"] = "dabench suite file"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def load_task_paths(paths: list[Path] | None) -> TaskSet:
    """The task files or folders given, else the built-in suites."""
    from dabench.tasks.loader import load_builtin_tasks, load_tasks

    return load_tasks(paths) if paths else load_builtin_tasks()


@app.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of a suite file (for editor completion)."""
    typer.echo(json.dumps(suite_file_schema(), indent=2, sort_keys=True))


@app.command("list")
def list_cmd(
    tasks: list[Path] | None = TASK_PATHS,
    suite: list[str] = typer.Option(
        [], "--suite", metavar="s1..s6", help="Only this suite (repeat for more)."
    ),
    smoke: bool = typer.Option(False, "--smoke", help="Only the smoke subset."),
    fmt: ListFormat = FORMAT_OPTION,
) -> None:
    """List tasks with suite, category and difficulty, and the task-set hash."""
    from dabench.tasks.selection import TaskSelection, select_tasks, suite_names

    selection = TaskSelection(suites=suite_names(suite), smoke=smoke)
    ts = select_tasks(load_task_paths(tasks), selection)
    columns = [
        Column("id", "id"),
        Column("suite", "suite"),
        Column("category", "category"),
        Column("difficulty", "difficulty"),
        Column("smoke", "smoke", lambda v: "yes" if v else ""),
        Column("file", "file"),
    ]
    rows = [
        {
            "id": item.id,
            "suite": item.suite,
            "category": item.category,
            "difficulty": item.difficulty,
            "smoke": item.smoke,
            "file": Path(ts.sources.get(item.id, "")).name,
        }
        for item in ts.items
    ]
    footer = f"{len(ts.items)} items, task-set hash {ts.hash()}"
    emit_rows(columns, rows, fmt, footer=footer)


@app.command("lock")
def lock_cmd(
    world: Path | None = typer.Option(
        None, "--world", metavar="DIR", help="A built world directory (default: the cache)."
    ),
    tasks: list[Path] | None = TASK_PATHS,
    out: Path | None = typer.Option(
        None, "--out", metavar="FILE", help="Lock file (default: WORLD/tasks.lock.json)."
    ),
) -> None:
    """Evaluate every task's truth SQL against the world and write the lock file."""
    from dabench.tasks.lock import LOCK_FILE, compute_lock, write_lock
    from dabench.world.cache import default_world

    world = world or default_world()
    ts = load_task_paths(tasks)
    lock = compute_lock(ts, world)
    path = write_lock(lock, out or world / LOCK_FILE)
    typer.echo(
        f"locked {len(lock.truths)} truths for {len(ts.items)} items on world "
        f"{lock.world_hash[:12]} -> {path}"
    )
