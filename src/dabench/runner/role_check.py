"""Check a role map by running the oracle through it on the smoke tasks (``dabench target
inspect --check``).

An ad-hoc experiment with one arm (an ``mcp`` target on the inspected server with the role
map, the oracle agent) runs the S1-S3 smoke tasks once and is graded; a task passes when its
episode completed and its grade passed. The run directory (experiment, journal, grades) is
kept where the caller says, so a failure can be read there.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from dabench.grading.run import agrade_run
from dabench.journal.store import Journal
from dabench.roles import ToolRoles
from dabench.runner.experiment import load_experiment
from dabench.runner.run import ExperimentRun
from dabench.targets.mcp import expand_env

CHECK_SUITES = ("s1", "s2", "s3")
"""Suites whose smoke tasks the check runs (S5 protocols need the reference admin API)."""


@dataclass(frozen=True)
class TaskCheck:
    """One smoke task through the role map."""

    task_id: str
    passed: bool
    detail: str


def check_experiment(
    target: dict[str, Any], roles: ToolRoles, world: Path | None
) -> dict[str, Any]:
    """The ad-hoc experiment of a check: one oracle arm on ``target`` with ``roles``."""
    exp: dict[str, Any] = {
        "name": "target-inspect-check",
        "description": "dabench target inspect --check: the oracle through a proposed role map",
        "world": {"dir": str(world)} if world else {"seed": 930, "scale": 1},
        "tasks": {"smoke": True, "suites": list(CHECK_SUITES)},
        "k": 1,
        "concurrency": 2,
        "episode_timeout_s": 120,
        "arms": [
            {
                "name": "inspected",
                "target": {"kind": "mcp", "name": "inspected", **target, "roles": roles.dump()},
                "agent": {"kind": "oracle"},
            }
        ],
    }
    return exp


def _headers_by_reference(target: dict[str, Any]) -> dict[str, Any]:
    """``target`` with each HTTP header value moved into an environment variable and
    referenced as ``${VAR}``, so no key is written into the check's experiment or manifest."""
    headers = target.get("headers") or {}
    refs = {}
    for i, (name, value) in enumerate(sorted(headers.items())):
        var = f"DABENCH_INSPECT_HEADER_{i}"
        os.environ[var] = expand_env(value)
        refs[name] = "${" + var + "}"
    return {**target, "headers": refs} if headers else target


async def acheck_roles(
    target: dict[str, Any], roles: ToolRoles, run_dir: Path, world: Path | None = None
) -> list[TaskCheck]:
    """Run the oracle through ``roles`` on the smoke tasks into ``run_dir`` and grade it
    (header values reach the target through the environment, never the run directory)."""
    target = _headers_by_reference(target)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "experiment.yaml"
    path.write_text(yaml.safe_dump(check_experiment(target, roles, world), sort_keys=False))
    exp = load_experiment(path)
    out = run_dir / "run"
    run = ExperimentRun(exp, out, experiment_dir=run_dir, console=Console(quiet=True))
    await run.execute()
    grades = {g.key: g for g in await agrade_run(out)}
    checks = []
    for ep in sorted(Journal(out).load(), key=lambda e: e.task_id):
        grade = grades.get(ep.key)
        if ep.status == "harness_error":
            checks.append(TaskCheck(ep.task_id, False, f"harness error: {ep.harness_error}"))
        elif grade is None:
            checks.append(TaskCheck(ep.task_id, False, "not graded"))
        else:
            passed = grade.passed and not grade.excluded
            checks.append(TaskCheck(ep.task_id, passed, grade.reason))
    return checks


def check_roles(
    target: dict[str, Any], roles: ToolRoles, run_dir: Path, world: Path | None = None
) -> list[TaskCheck]:
    """Synchronous :func:`acheck_roles`."""
    return asyncio.run(acheck_roles(target, roles, run_dir, world))
