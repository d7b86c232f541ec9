"""CLI help and the list commands' output (issue #11 item 4)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.tasks.loader import load_builtin_tasks


def _commands(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    subs = getattr(cmd, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from _commands(sub, [*path, name])
    else:
        yield path, cmd


ROOT = typer.main.get_command(app)
COMMANDS = list(_commands(ROOT, []))


def test_every_option_has_a_description_and_a_typed_placeholder() -> None:
    assert len(COMMANDS) > 15
    problems: list[str] = []
    for path, cmd in COMMANDS:
        ctx = typer._click.Context(cmd)
        for param in cmd.params:
            where = f"dabench {' '.join(path)} {param.opts[0]}"
            text = (getattr(param, "help", None) or "").strip()
            if not text or "\n" in text:
                problems.append(f"{where}: no one-line help ({text!r})")
            shown = param.display_type_rich(ctx)
            if getattr(param, "is_flag", False):
                if shown is not None:
                    problems.append(f"{where}: a flag shows a placeholder {shown!r}")
            elif not shown or shown == "<bool>":
                problems.append(f"{where}: placeholder {shown!r}")
    assert problems == []


@pytest.mark.parametrize("path", [["run"], ["tasks", "list"], ["history"], []])
def test_help_shows_no_bool_placeholder(path: list[str]) -> None:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Show this message and exit." in result.output
    assert "<bool>" not in result.output


def test_run_help_describes_the_run_flags() -> None:
    out = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["run", "--help"]).output
    for flag, placeholder in (
        ("--suite", "S1,S2.."),
        ("--arms", "ARM,ARM.."),
        ("--agent", "oracle|probe|replay|llm"),
        ("--model", "PROVIDER:MODEL"),
        ("--concurrency", "INT"),
    ):
        line = next(ln for ln in out.splitlines() if f" {flag} " in ln)
        assert placeholder in line, line
    assert "Show the progress bar (on stderr)." in out
    assert "Episodes in flight at once." in out


def _cli(*args: str) -> Any:
    """The CLI in-process; CliRunner's stdout is not a terminal (as when piped)."""
    return CliRunner(env={"COLUMNS": "40"}).invoke(app, list(args))


def test_tasks_list_never_truncates_when_piped() -> None:
    ids = load_builtin_tasks().ids
    done = _cli("tasks", "list")
    assert done.exit_code == 0, done.output
    assert "…" not in done.stdout
    lines = done.stdout.splitlines()
    # The id column is as wide as the longest id, whatever COLUMNS says.
    assert lines[1].split("┃")[1:3] == [" id" + " " * (max(map(len, ids)) - 1), " suite "]
    for task_id in ids:
        assert any(f"│ {task_id} " in ln for ln in lines), task_id
    assert lines[-1].startswith(f"{len(ids)} items, task-set hash ")


def test_tasks_list_json_and_csv() -> None:
    as_json = json.loads(_cli("tasks", "list", "--smoke", "--format", "json").stdout)
    smoke = [t for t in load_builtin_tasks().items if t.smoke]
    assert [r["id"] for r in as_json] == [t.id for t in smoke]
    assert set(as_json[0]) == {"id", "suite", "category", "difficulty", "smoke", "file"}
    assert all(r["smoke"] is True for r in as_json)
    rows = list(csv.DictReader(io.StringIO(_cli("tasks", "list", "--format", "CSV").stdout)))
    assert len(rows) == len(load_builtin_tasks().items)
    assert rows[0]["suite"] in {"s1", "s2", "s3", "s4", "s5"}
    bad = _cli("tasks", "list", "--format", "xml")
    assert bad.exit_code == 2 and "xml" in bad.stderr


def test_history_defaults_to_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    missing = _cli("history")
    assert isinstance(missing.exception, UserInputError)
    assert str(missing.exception) == "runs: not a directory"
    (tmp_path / "runs").mkdir()
    empty = _cli("history", "--format", "json")
    assert empty.exit_code == 0, empty.output
    assert json.loads(empty.stdout) == []
    table = _cli("history")
    assert "no run directories (with manifest.json) under runs" in table.stdout


def test_providers_lists_take_a_format() -> None:
    prices = list(
        csv.DictReader(io.StringIO(_cli("providers", "prices", "--format", "csv").stdout))
    )
    assert prices and set(prices[0]) == {
        "provider",
        "model",
        "input",
        "output",
        "cache_read",
        "cache_write",
    }
    kinds = json.loads(_cli("providers", "kinds", "--format", "json").stdout)
    assert {"kind": "fake", "base_url": "", "api_key": "", "notes": "scripted, no network"} in kinds
