"""No unreadable SQL tool result is ever graded: a server whose answers the reader cannot
read unambiguously turns every episode that needs one into a harness error (excluded from
accuracy), while servers whose answers it can read (here without column names, and through
a role map's JMESPath adapter) pass."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from dabench.grading.run import grade_run
from dabench.journal.store import Journal
from dabench.runner.experiment import load_experiment
from dabench.runner.run import ExperimentRun

from .test_roles_third_party import ROLES, SERVER
from .test_sql_result import AMBIGUOUS

TASKS = ["s2.tickets-2025", "s2.open-tickets", "s2.category-product-counts"]
UNREADABLE = [e for e in AMBIGUOUS if "unreadable" in e["expect"] and e["text"].strip()][
    ::3
]  # a spread of the constructed cases, one server each
ENVELOPE = {"path": "payload.batches[0].{columns: names, rows: tuples}", "format": "json"}


@pytest.mark.slow
def test_unreadable_results_are_harness_errors_never_grades(
    real_world: Path, tmp_path: Path
) -> None:
    warehouse = str(real_world / "warehouse.duckdb")
    arms = []
    for i, entry in enumerate(UNREADABLE):
        fixed = tmp_path / f"fixed{i}.txt"
        fixed.write_text(entry["text"], encoding="utf-8")
        command = [
            sys.executable,
            str(SERVER),
            warehouse,
            "--format",
            "fixed",
            "--fixed",
            str(fixed),
        ]
        arms.append({"name": f"unreadable{i}", "command": command, "roles": ROLES})
    for fmt, roles in (
        ("python", ROLES),
        ("envelope", {**ROLES, "sql": {**ROLES["sql"], "result": ENVELOPE}}),
    ):
        command = [sys.executable, str(SERVER), warehouse, "--format", fmt]
        arms.append({"name": fmt, "command": command, "roles": roles})
    exp = {
        "name": "unreadable",
        "world": {"dir": str(real_world)},
        "tasks": {"tasks": TASKS},
        "k": 1,
        "concurrency": 4,
        "arms": [
            {
                "name": a["name"],
                "target": {
                    "kind": "mcp",
                    "name": a["name"],
                    "command": a["command"],
                    "roles": a["roles"],
                    "share_process": True,
                },
                "agent": {"kind": "oracle"},
            }
            for a in arms
        ],
    }
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp))
    run_dir = tmp_path / "run"
    run = ExperimentRun(
        load_experiment(path), run_dir, experiment_dir=tmp_path, console=Console(quiet=True)
    )
    asyncio.run(run.execute())
    grades = {g.key: g for g in grade_run(run_dir, world=real_world)}
    episodes = Journal(run_dir).load()
    assert len(episodes) == len(arms) * len(TASKS)
    for ep in episodes:
        grade = grades[ep.key]
        if ep.arm.startswith("unreadable"):
            assert ep.status == "harness_error", (ep.arm, ep.final_answer)
            assert "unreadable SQL tool result" in (ep.harness_error or "")
            assert grade.excluded and not grade.passed
        else:
            assert ep.status == "completed", ep.harness_error
            assert grade.passed and not grade.excluded, (ep.arm, ep.task_id, grade.reason)
    assert len(UNREADABLE) >= 5
