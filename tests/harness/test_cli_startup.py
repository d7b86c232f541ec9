"""The CLI starts without loading the heavy modules (issue #28 item 1).

Timing is measured by benchmarks/cli_startup.py; this pins the cause instead, load-free: the
modules imported by ``dabench --version``, ``--help`` and every subcommand's ``--help``, read
from ``python -X importtime`` of the real entry point.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from dabench.agents.registry import AGENTS
from dabench.cli import app, placeholder
from dabench.targets.registry import TARGETS

SRC = Path(__file__).resolve().parents[2] / "src"

HEAVY = (
    "mcp",
    "mcp_types",
    "opentelemetry",
    "duckdb",
    "numpy",
    "httpx",
    "httpx2",
    "anthropic",
    "openai",
    "psycopg",
    "sqlglot",
    "jinja2",
    "starlette",
    "uvicorn",
    "yaml",
    "dabench.platform.app",
    "dabench.platform.service",
    "dabench.grading.run",
    "dabench.grading.episode",
    "dabench.journal.records",
    "dabench.tasks.model",
    "dabench.runner.run",
    "dabench.world.build",
    "dabench.stats.compute",
    "dabench.report.build",
)
"""Modules (and their submodules) no command may import before it runs."""


def _leaves(cmd: Any, path: list[str]) -> list[list[str]]:
    subs = getattr(cmd, "commands", None)
    if not subs:
        return [path]
    return [p for name, sub in sorted(subs.items()) for p in _leaves(sub, [*path, name])]


LEAVES = _leaves(typer.main.get_command(app), [])


def imported_modules(*argv: str) -> set[str]:
    """Every module ``python -X importtime -m dabench.cli ARGV`` imported."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "120"}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dabench.cli", *argv],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


_SCAN = r"""
import json, os, runpy, sys, tempfile
import dabench.cli  # light: test_the_root_imports_nothing_heavy checks the root's imports
answers = {}
for path in json.loads(sys.argv[1]):
    log = tempfile.TemporaryFile()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        sys.argv = ["dabench", *path, "--help"]
        code = 0
        try:
            runpy.run_module("dabench.cli", run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        with os.fdopen(w, "w") as out:
            json.dump({"code": code, "modules": sorted(sys.modules)}, out)
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as inp:
        answer = json.load(inp)
    os.waitpid(pid, 0)
    log.seek(0)
    answer["output"] = log.read().decode(errors="replace")
    answers[" ".join(path)] = answer
print(json.dumps(answers))
"""


@functools.cache
def leaf_modules() -> dict[str, dict[str, Any]]:
    """For each leaf command path, the modules ``dabench PATH --help`` imported, its exit code
    and output: one process imports ``dabench.cli``, then forks a child per leaf that runs the
    command as ``python -m dabench.cli PATH --help`` would (the same modules as a fresh
    process: the root's own, which the root tests check, and the command's)."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "120"}
    done = subprocess.run(
        [sys.executable, "-c", _SCAN, json.dumps(LEAVES)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    answers: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return answers


def heavy_in(modules: set[str]) -> list[str]:
    """The heavy modules among ``modules``."""
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_the_scan_sees_a_heavy_import() -> None:
    """The check can fail: a command that runs imports what its help must not."""
    assert len(LEAVES) > 25
    assert heavy_in({"numpy.linalg", "dabench.platform.app", "typer"}) == [
        "dabench.platform.app",
        "numpy.linalg",
    ]


@pytest.mark.parametrize("argv", [["--version"], ["--help"]], ids=" ".join)
def test_the_root_imports_nothing_heavy(argv: list[str]) -> None:
    modules = imported_modules(*argv)
    assert "dabench.runner.commands" in modules  # the commands were mounted
    assert heavy_in(modules) == []


@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_no_subcommand_help_imports_anything_heavy(path: list[str]) -> None:
    answer = leaf_modules()[" ".join(path)]
    assert answer["code"] == 0, answer["output"]
    assert "Usage" in answer["output"]  # the command's help ran
    assert heavy_in(set(answer["modules"])) == []


def test_one_placeholder_style() -> None:
    assert placeholder("<path>") == "PATH"
    assert placeholder("<int range>") == "INT"
    assert placeholder("<list[str]>") == "TEXT"
    assert placeholder("<table|json|csv>") == "table|json|csv"


def test_registries_name_their_kinds_without_importing_them() -> None:
    code = (
        "import json, sys; from dabench.agents.registry import AGENTS; "
        "from dabench.targets.registry import TARGETS; "
        "print(AGENTS.names(), TARGETS.names()); "
        "print(json.dumps([m for m in sys.modules if m.startswith(('dabench.agents.', "
        "'dabench.targets.'))]))"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.splitlines()
    assert "oracle" in out[0] and "reference" in out[0]
    loaded = set(json.loads(out[1]))
    assert loaded <= {
        "dabench.agents.base",
        "dabench.agents.registry",
        "dabench.targets.base",
        "dabench.targets.registry",
    }, loaded
    # Used, a kind is imported and validated like a registered one.
    assert AGENTS.validate({"kind": "oracle"}, "agent").model_dump()["kind"] == "oracle"
    assert set(TARGETS.kinds()) == {"reference", "mcp", "kibana"}


def test_every_placeholder_in_the_help_has_one_style() -> None:
    root = typer.main.get_command(app)
    shown: list[str] = []

    def walk(cmd: Any) -> None:
        for sub in (getattr(cmd, "commands", None) or {}).values():
            walk(sub)
        ctx = typer._click.Context(cmd)
        for param in cmd.params:
            text = param.display_type_rich(ctx) if hasattr(param, "display_type_rich") else None
            if text:
                shown.append(text)

    walk(root)
    assert len(shown) > 100
    odd = [s for s in shown if "<" in s or (s != s.upper() and "|" not in s and ".." not in s)]
    assert sorted(set(odd)) == ["duckdb:PATH", "vX.Y.Z"], odd  # a scheme or a version pattern
