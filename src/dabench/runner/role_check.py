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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from dabench.errors import HarnessError
from dabench.grading.run import agrade_run
from dabench.journal.records import Episode
from dabench.journal.store import Journal
from dabench.roles import ToolRoles
from dabench.runner.experiment import load_experiment
from dabench.runner.run import ExperimentRun
from dabench.sqlresult import read_sql_result
from dabench.targets.mcp import expand_env

CHECK_SUITES = ("s1", "s2", "s3")
"""Suites whose smoke tasks the check runs (S5 protocols need the reference admin API)."""
CHECK_SESSIONS = {"share_process": True}
"""How the check runs a stdio server unless the target settings say otherwise
(``share_process`` or ``warm_pool`` given): one process and MCP session for its ten episodes,
each with its own handle, instead of a server start per episode."""


@dataclass(frozen=True)
class TaskCheck:
    """One smoke task through the role map."""

    task_id: str
    passed: bool
    detail: str
    read: list[str] = field(default_factory=list)
    """What the reader made of each result of the ``sql`` role (format, size, columns), or
    why it could not read it."""


def _reads(episode: Episode, roles: ToolRoles) -> list[str]:
    """What :func:`~dabench.sqlresult.read_sql_result` reads from each sql call."""
    binding = roles.binding("sql")
    out = []
    for call in episode.tool_calls:
        if binding is None or call.name not in binding.tools:
            continue
        if call.is_error:
            out.append(f"tool error: {call.result.strip()[:120]}")
            continue
        try:
            out.append(read_sql_result(call.result, binding.result, "check").describe())
        except HarnessError as exc:
            out.append(str(exc)[:200])
    return out


def check_experiment(
    target: dict[str, Any], roles: ToolRoles, world: Path | None
) -> dict[str, Any]:
    """The ad-hoc experiment of a check: one oracle arm on ``target`` with ``roles``; a stdio
    server shares one process across the episodes (:data:`CHECK_SESSIONS`) unless ``target``
    sets ``share_process`` or ``warm_pool``."""
    if target.get("command") and "share_process" not in target and not target.get("warm_pool"):
        target = {**target, **CHECK_SESSIONS}
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


def _secrets_by_reference(target: dict[str, Any]) -> dict[str, Any]:
    """``target`` with each HTTP header and stdio environment value moved into an environment
    variable of this process and referenced as ``${VAR}``, so no key or DSN is written into
    the check's experiment or manifest."""
    out = dict(target)
    for key, prefix in (("headers", "DABENCH_INSPECT_HEADER"), ("env", "DABENCH_INSPECT_ENV")):
        values = target.get(key) or {}
        refs = {}
        for i, (name, value) in enumerate(sorted(values.items())):
            var = f"{prefix}_{i}"
            os.environ[var] = expand_env(value) if key == "headers" else value
            refs[name] = "${" + var + "}"
        if values:
            out[key] = refs
    return out


async def acheck_roles(
    target: dict[str, Any], roles: ToolRoles, run_dir: Path, world: Path | None = None
) -> list[TaskCheck]:
    """Run the oracle through ``roles`` on the smoke tasks into ``run_dir`` and grade it
    (header values reach the target through the environment, never the run directory)."""
    target = _secrets_by_reference(target)
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
        read = _reads(ep, roles)
        if ep.status == "harness_error":
            detail = f"harness error: {ep.harness_error}"
            checks.append(TaskCheck(ep.task_id, False, detail, read))
        elif grade is None:
            checks.append(TaskCheck(ep.task_id, False, "not graded", read))
        else:
            passed = grade.passed and not grade.excluded
            checks.append(TaskCheck(ep.task_id, passed, grade.reason, read))
    return checks


def check_roles(
    target: dict[str, Any], roles: ToolRoles, run_dir: Path, world: Path | None = None
) -> list[TaskCheck]:
    """Synchronous :func:`acheck_roles`."""
    return asyncio.run(acheck_roles(target, roles, run_dir, world))
