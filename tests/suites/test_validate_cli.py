"""`dabench tasks validate` on the command line: exit codes and output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from dabench.cli import app

TASKS = """
tasks:
  - id: cli.stores
    suite: s2
    category: single_tool
    difficulty: easy
    prompt: How many stores are there?
    grading: {kind: numeric, truth_sql: "SELECT count(*) FROM sales.stores", tolerance_rel: 0.0}
  - id: cli.where-orders
    suite: s1
    category: discovery
    difficulty: easy
    prompt: Where are orders?
    grading: {kind: entity, entities: [sales.orders], wrong_aliases: [WRONG_ALIAS]}
"""


def _invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["tasks", "validate", *args])
    return result.exit_code, result.output


def test_bad_input_exits_2(tmp_path: Path, suites_world: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "dabench.cli", "tasks", "validate", *args]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)

    done = run("--world", str(tmp_path))
    assert done.returncode == 2
    assert f"error: --world {tmp_path}: neither a built world" in done.stderr
    done = run("--world", str(suites_world), "--arms", "a9", "--smoke")
    assert done.returncode == 2 and "profile 'a9'" in done.stderr


def test_an_issue_exits_1(tmp_path: Path, suites_world: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(TASKS.replace("WRONG_ALIAS", "sales.orders_v2"))
    code, out = _invoke(["--world", str(suites_world), "--tasks", str(bad), "--arms", "a0"])
    assert code == 1, out
    assert "'sales.orders_v2'" in out and "1 issue(s)" in out
    assert "2 items, 2 oracle episodes on a0" in " ".join(out.split()), out
    rows = [line for line in out.splitlines() if line.startswith("│ cli.")]
    assert len(rows) == 2 and all(" ok " in row for row in rows), rows
