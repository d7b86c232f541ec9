"""The protocol runner against real platform processes: verification fails when the state does
not change (no memory on a2), and LLM-agent steps run as the step's identity."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from dabench.grading import grade_protocol_episode
from dabench.journal.records import Episode
from dabench.journal.store import Journal
from dabench.runner.experiment import Experiment
from dabench.runner.run import ExperimentRun
from dabench.tasks.loader import TaskSet, dump_tasks


@pytest.fixture(scope="module")
def protocol_run(
    suites_world: Path, builtin: TaskSet, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Episode]:
    """s5.flagship-store with the oracle on a2 (no memory tools) and with a scripted LLM agent
    (fake provider: search, one SQL query, an answer) on a3."""
    base = tmp_path_factory.mktemp("protocol-run")
    protocol = builtin.get("s5.flagship-store").model_copy(update={"arms": ["a2", "llm-a3"]})
    tasks = dump_tasks(TaskSet(protocols=[protocol]), base / "tasks.yaml")  # type: ignore[list-item]
    exp = Experiment.model_validate(
        {
            "name": "protocol-runner",
            "world": {"dir": str(suites_world)},
            "tasks": {"builtin": False, "files": [str(tasks)]},
            "arms": [
                {"name": "a2", "target": {"kind": "reference", "profile": "a2"},
                 "agent": {"kind": "oracle"}},
                {"name": "llm-a3", "target": {"kind": "reference", "profile": "a3"},
                 "agent": {"kind": "llm", "model": "fake:calls=2,latency=0,sql=SELECT 42"}},
            ],
        }
    )  # fmt: skip
    run = ExperimentRun(
        exp, base / "run", experiment_dir=base, console=Console(quiet=True), progress=False
    )
    import asyncio

    summary = asyncio.run(run.execute())
    assert not summary.harness_errors, summary.harness_errors
    return {e.arm: e for e in Journal(base / "run").load()}


def test_capture_fails_without_memory(protocol_run: dict[str, Episode]) -> None:
    ep = protocol_run["a2"]
    assert ep.status == "completed"
    steps = {s.name: s for s in ep.steps}
    assert steps["teach"].passed is None
    assert "cannot keep notes" in (steps["teach"].answer or "")
    assert steps["captured"].passed is False
    assert "found 0" in steps["captured"].detail
    assert steps["captured"].state["insights"] == []
    assert steps["recall"].passed is False  # the oracle found nothing and said so
    assert steps["promote"].passed is False  # a2 has no apply_knowledge tool either
    assert "UNKNOWN_TOOL" in steps["promote"].detail
    assert steps["promoted"].passed is False
    grade = grade_protocol_episode(ep)
    assert not grade.passed and "captured" in grade.reason


def test_llm_steps_run_as_the_step_identity(protocol_run: dict[str, Episode]) -> None:
    ep = protocol_run["llm-a3"]
    assert ep.status == "completed" and ep.agent == "llm"
    assert ep.audit is not None and ep.audit.ok, ep.audit.detail
    user_of = {r["session_id"]: r["user_id"] for r in ep.audit.rows}
    identities = {}
    for step in ep.steps:
        for call in step.tool_calls:
            identities.setdefault(step.name, set()).add(user_of[call.session])
    assert identities["teach"] == {"teacher"} and identities["recall"] == {"teacher"}
    assert identities["learner-before"] == {"learner"} and identities["transfer"] == {"learner"}
    assert identities["promote"] == {"reviewer"}
    steps = {s.name: s for s in ep.steps}
    # The scripted model never calls memory_capture: nothing to verify, nothing to promote.
    assert steps["captured"].passed is False and steps["promote"].passed is False
    assert steps["recall"].answer is not None and steps["recall"].passed is False
    assert len(ep.answers) == 4  # one per episode step
