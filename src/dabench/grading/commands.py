"""``dabench grade RUN_DIR``: re-grade a run from its journal."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from dabench.defaults import DEFAULT_TOOL_OUTPUT_CHARS
from dabench.listing import stdout_console

if TYPE_CHECKING:
    from rich.table import Table

    from dabench.journal.records import Grade
    from dabench.judge.judge import Judge


def _uncertain(grades: list[Grade]) -> str:
    """``N`` uncertain grades, with how many the judge settled (passed / failed)."""
    uncertain = [g for g in grades if g.uncertain]
    judged = [g for g in uncertain if g.settled_by == "judge"]
    if not judged:
        return str(len(uncertain))
    passed = sum(g.passed for g in judged)
    return f"{len(uncertain)} (judge: {passed} passed, {len(judged) - passed} failed)"


def _summary(grades: list[Grade]) -> Table:
    from rich.table import Table

    table = Table(title="grades")
    columns = ("kind", "episodes", "passed", "excluded", "uncertain", "judged", "mean overall")
    for column in columns:
        table.add_column(column, justify="left" if column == "kind" else "right")
    by_kind: dict[str, list[Grade]] = defaultdict(list)
    for grade in grades:
        by_kind[grade.kind].append(grade)
    for kind, group in sorted(by_kind.items()):
        counted = [g for g in group if not g.excluded]
        overall = [g.scores.get("overall", 0.0) for g in counted]
        table.add_row(
            kind,
            str(len(group)),
            str(sum(g.passed for g in counted)),
            str(len(group) - len(counted)),
            _uncertain(counted),
            str(sum(1 for g in group if g.judge and "error" not in g.judge)),
            f"{sum(overall) / len(overall):.3f}" if overall else "-",
        )
    return table


def grade_cmd(
    run_dir: Path = typer.Argument(..., help="A run directory (manifest.json, episodes.jsonl)."),
    judge: str | None = typer.Option(None, "--judge", help="Judge model as provider:model."),
    judge_base_url: str | None = typer.Option(None, "--judge-base-url", help="Judge API URL."),
    judge_all: bool = typer.Option(
        False, "--judge-all", help="Judge every completed episode, not only where needed."
    ),
    lock: Path | None = typer.Option(
        None, "--lock", help="Lock file (default RUN_DIR/tasks.lock.json)."
    ),
    tasks: Path | None = typer.Option(
        None, "--tasks", help="Task file or folder (default: built-in)."
    ),
    world: Path | None = typer.Option(None, "--world", help="World directory (for exec_sql)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Do not use the judge cache."),
    tool_output_chars: int = typer.Option(
        DEFAULT_TOOL_OUTPUT_CHARS,
        "--tool-output-chars",
        help="Truncate tool outputs for the judge.",
    ),
    no_judge: bool = typer.Option(
        False,
        "--no-judge",
        help="Deterministic grading only, even if the experiment names a judge.",
    ),
) -> None:
    """Re-grade every episode of RUN_DIR and rewrite its grades.jsonl."""
    from dabench.grading.run import grade_run
    from dabench.journal.store import read_manifest
    from dabench.judge.factory import make_judge

    read_manifest(run_dir)  # refuse anything but a run directory before touching it
    the_judge: Judge | None = None
    if judge and not no_judge:
        the_judge = make_judge(
            judge,
            base_url=judge_base_url,
            use_cache=not no_cache,
            tool_output_chars=tool_output_chars,
        )
    grades = grade_run(
        run_dir,
        tasks=tasks,
        lock=lock,
        judge=the_judge,
        world=world,
        judge_all=judge_all,
        progress=True,
        manifest_judge=not no_judge,
    )
    console = stdout_console()
    console.print(_summary(grades))
    judged = [g.judge for g in grades if g.judge and "error" not in g.judge]
    if judged:
        cached = sum(1 for j in judged if j.get("cached"))
        cost = sum(float(j.get("cost_usd") or 0.0) for j in judged)
        console.print(
            f"judge {judged[0].get('model')}: {len(judged)} verdicts, {cached} from the cache, "
            f"reported cost ${cost:.4f}"
        )
    console.print(f"wrote {len(grades)} grades to {run_dir / 'grades.jsonl'}")
