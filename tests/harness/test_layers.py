"""The package layers: data flows world -> platform <- targets <- agents <- runner -> journal ->
grading/judge -> stats -> report, and a lower package never imports a higher one (task
validation, which runs the oracle through the runner, sits above them all)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "dabench"

FORBIDDEN: dict[str, set[str]] = {
    "world": {"platform", "targets", "agents", "runner", "grading", "judge", "stats", "report",
              "validation", "tasks"},
    "tasks": {"platform", "targets", "agents", "runner", "grading", "judge", "stats", "report",
              "validation"},
    "platform": {"targets", "agents", "runner", "grading", "judge", "stats", "report",
                 "validation"},
    "targets": {"agents", "runner", "grading", "judge", "stats", "report", "validation"},
    "sqlresult": {"world", "tasks", "platform", "targets", "agents", "runner", "grading", "judge",
                  "stats", "report", "validation", "journal", "store", "providers"},
    "agents": {"runner", "grading", "judge", "stats", "report", "validation"},
    "journal": {"targets", "agents", "runner", "grading", "judge", "stats", "report",
                "validation"},
    "grading": {"targets", "agents", "runner", "stats", "report", "validation"},
    "stats": {"targets", "agents", "runner", "report", "validation"},
}  # fmt: skip
"""Package -> packages it must never import (at module level or inside a function)."""


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dabench."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("dabench."))
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_package_imports_a_higher_layer(package: str) -> None:
    bad = [
        f"{path.relative_to(SRC)} imports dabench.{name}"
        for path in sorted((SRC / package).rglob("*.py"))
        for name in sorted(_imports(path) & FORBIDDEN[package])
    ]
    assert bad == []


def test_the_scanner_sees_function_level_imports(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from dabench.runner.run import x\n", encoding="utf-8")
    assert _imports(f) == {"runner"}
