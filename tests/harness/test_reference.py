"""The main job offline: `dabench run --smoke` with the oracle on the reference platform (tasks
on a0 and a2, the lifecycle protocol on a3), the LLM agent's hidden session handle, and replaying
a recorded run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from dabench.cli import app
from dabench.journal.store import Journal, load_grades, read_manifest
from dabench.runner.experiment import load_experiment
from dabench.runner.run import ExperimentRun
from dabench.stats.compute import compute_stats
from dabench.stats.rundir import load_run


@pytest.fixture(scope="session")
def smoke_run(real_world: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`dabench run --smoke` once (oracle: tasks on a0 and a2, the protocol on a3), graded."""
    run_dir = tmp_path_factory.mktemp("smoke") / "run"
    result = CliRunner().invoke(
        app, ["run", "--smoke", "--world", str(real_world), "--out", str(run_dir), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    return run_dir, result.output


def test_smoke_runs_oracle_on_a0_and_a2(smoke_run: tuple[Path, str]) -> None:
    run_dir, output = smoke_run
    assert "no model used: oracle agent" in output
    assert "--model anthropic:claude-sonnet-4-5" in output
    all_episodes = Journal(run_dir).load()
    assert {e.arm for e in all_episodes} == {"a0", "a2", "a3"}
    # a3 plays only the S5 smoke protocol; a0 and a2 play every smoke task and no protocol.
    protocols = [e for e in all_episodes if e.arm == "a3"]
    assert [e.suite for e in protocols] == ["s5"] and protocols[0].status == "completed"
    assert protocols[0].steps and all(s.passed is not False for s in protocols[0].steps)
    episodes = [e for e in all_episodes if e.arm != "a3"]
    assert all(e.suite != "s5" for e in episodes)
    assert len(episodes) == 2 * len({e.task_id for e in episodes})
    for ep in episodes:
        assert ep.status == "completed", (ep.key, ep.harness_error)
        assert ep.agent == "oracle" and ep.target == f"reference:{ep.arm}"
        assert ep.audit is not None and ep.audit.source == "platform"
        assert ep.audit.ok and ep.audit.audit_rows == len(ep.tool_calls), ep.audit.detail
        assert all(
            c.session == ep.sessions[0] and c.session.startswith("dps_") for c in ep.tool_calls
        )
        assert not any(c.is_error for c in ep.tool_calls), [c.result for c in ep.tool_calls]
        names = [c.name for c in ep.tool_calls]
        # a2 has the search-first gate: the oracle searches before anything else; a0 has
        # no search tool.
        if ep.arm == "a2" and names:
            assert names[0] == "search"
        assert ep.arm == "a2" or "search" not in names
        assert ep.final_answer is not None and ep.final_answer.startswith("FINAL ANSWER:")


def test_smoke_manifest(smoke_run: tuple[Path, str], real_world: Path) -> None:
    run_dir, _ = smoke_run
    m = read_manifest(run_dir)
    assert m.no_model and m.k == 1 and m.world_seed == 930
    assert m.world_hash == json.loads((real_world / "world.json").read_text())["world_hash"]
    assert m.finished_at is not None and m.task_set_hash and m.task_ids
    for arm in m.arms:
        assert arm["efficiency_source"] == "platform"
        assert arm["target"]["profile"] == arm["name"]
        assert arm["target"]["profile_hash"] and arm["target"]["world_hash"] == m.world_hash
        assert arm["agent"]["kind"] == "oracle"


def test_oracle_passes_every_grade(smoke_run: tuple[Path, str]) -> None:
    run_dir, _ = smoke_run
    grades = load_grades(run_dir)
    assert grades, "grading did not run"
    failed = [(g.key, g.reason) for g in grades if not g.passed]
    assert not failed


def _exp(
    tmp_path: Path,
    world: Path,
    agent: dict[str, object],
    profile: str = "a2",
    client: str = "lean",
    tasks: list[str] | None = None,
) -> Path:
    """A one-arm experiment on the smoke tasks (``tasks``: only those of them)."""
    path = tmp_path / "exp.yaml"
    exp = {
        "name": "ref",
        "world": {"dir": str(world)},
        "tasks": {"smoke": True, **({"tasks": tasks} if tasks else {})},
        "arms": [
            {
                "name": profile,
                "target": {"kind": "reference", "profile": profile, "client": client},
                "agent": agent,
            }
        ],
    }
    path.write_text(yaml.safe_dump(exp))
    return path


async def test_llm_agent_never_sees_the_session_handle(tmp_path: Path, real_world: Path) -> None:
    # Two smoke tasks (one per suite): the handle is hidden the same way in every episode.
    agent = {"kind": "llm", "model": "fake:calls=2,sql=SELECT 42"}
    tasks = ["s1.orders-source", "s3.test-accounts.customers"]
    exp = load_experiment(_exp(tmp_path, real_world, agent, tasks=tasks))
    run = ExperimentRun(
        exp, tmp_path / "run", experiment_dir=tmp_path, console=Console(quiet=True), progress=False
    )
    summary = await run.execute()
    assert summary.statuses["completed"] == summary.finished == len(tasks)
    assert not summary.audit_gaps
    target = run.arms[0].target
    assert target.label == "reference:a2"
    for ep in Journal(tmp_path / "run").load():
        assert [c.name for c in ep.tool_calls] == ["search", "sql_query"]
        for call in ep.tool_calls:
            assert "session_id" not in call.arguments  # the model's arguments, as it sent them
        assert ep.audit is not None and ep.audit.audit_rows == 2 and ep.audit.ok
        assert "42" in (ep.final_answer or "")
        assert ep.usage.input > 0 and ep.provider == "fake"


async def test_replay_of_a_recorded_run(
    smoke_run: tuple[Path, str], tmp_path: Path, real_world: Path
) -> None:
    recorded_dir, _ = smoke_run
    # Replayed through the official MCP client (the smoke run used the lean one).
    replay = {"kind": "replay", "run": str(recorded_dir)}
    exp = load_experiment(_exp(tmp_path, real_world, replay, client="sdk"))
    run = ExperimentRun(
        exp, tmp_path / "run", experiment_dir=tmp_path, console=Console(quiet=True), progress=False
    )
    summary = await run.execute()
    assert summary.statuses["completed"] == summary.finished > 0 and not summary.audit_gaps
    recorded = {e.key: e for e in Journal(recorded_dir).load()}
    for ep in Journal(tmp_path / "run").load():
        original = recorded[ep.key]
        assert ep.agent == "replay" and ep.answers == original.answers
        assert [(c.name, c.arguments) for c in ep.tool_calls] == [
            (c.name, c.arguments) for c in original.tool_calls
        ]
        assert [c.result for c in ep.tool_calls] == [c.result for c in original.tool_calls]
        assert ep.sessions != original.sessions


def _replay_exp(tmp_path: Path, world: Path, recorded: Path, profile: str, mode: str) -> Path:
    """An arm named a2 that replays the recorded a2 episodes onto a ``profile`` target."""
    path = tmp_path / "exp.yaml"
    agent = {"kind": "replay", "run": str(recorded), "arm": "a2", "mode": mode}
    arm = {"name": "a2", "target": {"kind": "reference", "profile": profile}, "agent": agent}
    exp = {"name": "rp", "world": {"dir": str(world)}, "tasks": {"smoke": True}, "arms": [arm]}
    path.write_text(yaml.safe_dump(exp))
    return path


@pytest.mark.slow
async def test_replay_onto_a_different_target_diverges(
    smoke_run: tuple[Path, str], tmp_path: Path, real_world: Path
) -> None:
    from dabench.agents.replay import output_fingerprint
    from dabench.grading import agrade_run

    recorded_dir, _ = smoke_run
    exp = load_experiment(_replay_exp(tmp_path, real_world, recorded_dir, "a0", "tools"))
    run = ExperimentRun(
        exp, tmp_path / "run", experiment_dir=tmp_path, console=Console(quiet=True), progress=False
    )
    await run.execute()
    recorded = {e.key: e for e in Journal(recorded_dir).load()}
    episodes = Journal(tmp_path / "run").load()
    diverged = [e for e in episodes if e.status == "harness_error"]
    assert diverged, "a2's recorded tool outputs replayed on a0 must differ somewhere"
    for ep in episodes:
        original = recorded[ep.key]
        same = [output_fingerprint(c) for c in ep.tool_calls] == [
            output_fingerprint(c) for c in original.tool_calls
        ]
        # Diverged exactly when some replayed output differs from the recording.
        assert (ep.status == "harness_error") == (not same), ep.key
        if not same:
            assert ep.harness_error and ep.harness_error.startswith("replay diverged"), ep.key
            assert "first: call #" in ep.harness_error and "reference:a0" in ep.harness_error
    grades = {g.key: g for g in await agrade_run(tmp_path / "run", world=real_world)}
    for ep in diverged:
        assert grades[ep.key].excluded and "replay diverged" in grades[ep.key].reason
    caveats = compute_stats(load_run(tmp_path / "run"), resamples=0).caveats
    assert any(f"{len(diverged)} replayed episode(s) diverged" in c for c in caveats), caveats


@pytest.mark.slow
async def test_replay_answer_only_regrades_without_calling_the_target(
    smoke_run: tuple[Path, str], tmp_path: Path, real_world: Path
) -> None:
    recorded_dir, _ = smoke_run
    exp = load_experiment(_replay_exp(tmp_path, real_world, recorded_dir, "a0", "answer_only"))
    run = ExperimentRun(
        exp, tmp_path / "run", experiment_dir=tmp_path, console=Console(quiet=True), progress=False
    )
    summary = await run.execute()
    assert summary.statuses["completed"] == summary.finished > 0
    recorded = {e.key: e for e in Journal(recorded_dir).load()}
    for ep in Journal(tmp_path / "run").load():
        original = recorded[ep.key]
        assert ep.answers == original.answers and not ep.sessions
        assert [c.result for c in ep.tool_calls] == [c.result for c in original.tool_calls]
    manifest = read_manifest(tmp_path / "run")
    assert manifest.arms[0]["agent"]["mode"] == "answer_only"
    caveats = compute_stats(load_run(tmp_path / "run"), resamples=0).caveats
    assert any("Arm a2 replays in answer_only mode" in c for c in caveats), caveats
