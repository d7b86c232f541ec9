"""Tool roles end to end on a server that is not the reference platform: the oracle passes
the smoke tasks through a role map, and grading scores its episodes exactly as the same SQL
on reference a0 (tool overlap and exec_sql by role, never by literal tool name)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from rich.console import Console

from dabench.agents.base import EpisodeRequest, EpisodeTranscript
from dabench.agents.oracle import OracleAgent, OracleAgentConfig
from dabench.errors import HarnessError, UserInputError
from dabench.grading.episode import agrade_episode
from dabench.grading.run import grade_run
from dabench.grading.tool_equivalents import manifest_roles
from dabench.journal.records import Episode, Grade
from dabench.journal.store import Journal, read_manifest
from dabench.report.context import build_context
from dabench.report.episodes import episode_detail
from dabench.runner.experiment import load_experiment
from dabench.runner.run import ExperimentRun
from dabench.stats.compute import compute_stats
from dabench.stats.frame import build_frame
from dabench.stats.rundir import load_run
from dabench.targets.base import TargetContext
from dabench.targets.registry import make_target
from dabench.tasks.loader import load_builtin_tasks, load_tasks
from dabench.tasks.lock import read_lock

from .conftest import DATA

SERVER = DATA / "roles_server.py"
ROLES = {
    "sql": {"tool": "execute_query", "arguments": {"sql": "statement"}, "drop": ["limit"]},
    "describe": {"tool": "table_schema", "arguments": {"table": "name"}},
    "list": {"tool": "show_tables", "drop": ["pattern"]},
}
EXEC_SQL_TASKS = ["s2.category-product-counts", "s2.xtab-priority-channel"]


def server_command(world: Path, fmt: str = "json") -> list[str]:
    """The test server over a world's warehouse."""
    return [sys.executable, str(SERVER), str(world / "warehouse.duckdb"), "--format", fmt]


def task_ids() -> list[str]:
    smoke = [t.id for t in load_builtin_tasks().tasks if t.smoke]
    return smoke + EXEC_SQL_TASKS


@pytest.fixture(scope="module")
def roles_run(real_world: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Reference a0 and the test server (JSON and markdown results, one process per arm),
    oracle, graded."""
    tmp = tmp_path_factory.mktemp("roles")
    exp = {
        "name": "roles",
        "world": {"dir": str(real_world)},
        "tasks": {"tasks": task_ids()},
        "k": 1,
        "concurrency": 4,
        "arms": [
            {"name": "a0", "target": {"kind": "reference", "profile": "a0"}},
            *(
                {
                    "name": name,
                    "target": {
                        "kind": "mcp",
                        "name": name,
                        "command": server_command(real_world, fmt),
                        "roles": ROLES,
                        # One server process per arm, each episode its own handle: the roles
                        # and grades are tested here, a process per episode in test_mcp_target.
                        "share_process": True,
                    },
                }
                for name, fmt in (("third", "json"), ("third-md", "markdown"))
            ),
        ],
    }
    for arm in exp["arms"]:
        arm["agent"] = {"kind": "oracle"}
    path = tmp / "exp.yaml"
    path.write_text(yaml.safe_dump(exp))
    run_dir = tmp / "run"
    run = ExperimentRun(
        load_experiment(path), run_dir, experiment_dir=tmp, console=Console(quiet=True)
    )
    summary = asyncio.run(run.execute())
    assert not summary.harness_errors, summary.harness_errors
    grade_run(run_dir, world=real_world)
    return run_dir


def _by_arm(run_dir: Path) -> dict[str, dict[str, Episode]]:
    out: dict[str, dict[str, Episode]] = {}
    for ep in Journal(run_dir).load():
        out.setdefault(ep.arm, {})[ep.task_id] = ep
    return out


@pytest.mark.slow
async def test_oracle_passes_through_the_role_map(roles_run: Path) -> None:
    episodes = _by_arm(roles_run)
    assert set(episodes) == {"a0", "third", "third-md"}
    for arm in ("third", "third-md"):
        assert set(episodes[arm]) == set(task_ids())
        for ep in episodes[arm].values():
            assert ep.status == "completed", (ep.key, ep.harness_error)
            for call in ep.tool_calls:
                assert not call.is_error, call.result
                assert call.name in {"execute_query", "table_schema"}
                assert "limit" not in call.arguments and "sql" not in call.arguments
                assert call.roles == (["sql"] if call.name == "execute_query" else ["describe"])
    manifest = read_manifest(roles_run)
    arms = {a["name"]: a for a in manifest.arms}
    assert arms["third"]["roles"] == ROLES
    assert arms["a0"]["roles"]["sql"] == {"tool": "sql_query"}


@pytest.mark.slow
async def test_grades_equal_reference_a0(roles_run: Path) -> None:
    grades: dict[str, dict[str, Grade]] = {}
    episodes = _by_arm(roles_run)
    for grade in [Grade.model_validate_json(line) for line in (roles_run / "grades.jsonl").open()]:
        arm, task, _ = grade.key.split("/")
        grades.setdefault(arm, {})[task] = grade
    for task in task_ids():
        ref = grades["a0"][task]
        assert ref.passed, (task, ref.reason)
        for arm in ("third", "third-md"):
            got = grades[arm][task]
            assert got.passed, (arm, task, got.reason)
            assert got.scores.get("tool") == ref.scores.get("tool"), (task, got.checks)
            assert got.scores["correctness"] == ref.scores["correctness"]
    # exec_sql from the tool call alone (no ```sql block in the answer): the same SQL
    # through execute_query(statement) scores as through sql_query(sql).
    manifest = read_manifest(roles_run)
    roles = manifest_roles(manifest)
    tasks = {t.id: t for t in load_builtin_tasks().tasks}
    lock = read_lock(roles_run / "tasks.lock.json")
    warehouse = Path(manifest.experiment["world"]["dir"]) / "warehouse.duckdb"
    for task_id in EXEC_SQL_TASKS:
        scored = {}
        for arm in ("a0", "third"):
            ep = episodes[arm][task_id]
            answer = (ep.final_answer or "").split("```sql")[0].strip()
            # One fixed wall time for both arms: the latency score (and through it the
            # overall) would otherwise depend on how busy the machine was during the run.
            bare = ep.model_copy(
                update={"final_answer": answer, "answers": [answer], "wall_ms": 1_000.0}
            )
            grade = await agrade_episode(
                bare,
                tasks[task_id],
                lock.truths[task_id],
                warehouse=warehouse,
                roles=roles.get(arm),
                offered_tools=manifest.arms[[a["name"] for a in manifest.arms].index(arm)].get(
                    "tools"
                ),
            )
            check = next(c for c in grade.checks if c.name == "exec_sql")
            assert check.passed and "(sql role)" in check.reason, check.reason
            scored[arm] = grade.scores
        assert scored["third"] == scored["a0"]


@pytest.mark.slow
def test_statistics_and_report_count_roles(roles_run: Path) -> None:
    run = load_run(roles_run)
    frame = build_frame(run)
    third = np.array([ep.arm != "a0" for ep in frame.episodes])
    assert frame.tool_expected[third].sum() == frame.tool_expected[~third].sum() * 2
    assert not frame.tool_mismatch.any()
    ctx = build_context(run, compute_stats(run), frame)
    i = next(
        i
        for i, ep in enumerate(frame.episodes)
        if ep.arm == "third" and ep.task_id == EXEC_SQL_TASKS[0]
    )
    detail = episode_detail(ctx, i, with_transcript=True)
    assert detail["expected_tools"] == ["sql_query (role sql)"]
    assert detail["used_tools"] == ["execute_query (sql)"] and not detail["mismatch"]


async def test_a_role_bound_to_a_missing_tool_is_refused_at_start(
    tmp_path: Path, mini_world: Path
) -> None:
    config = {
        "kind": "mcp",
        "name": "third",
        "command": server_command(mini_world),
        "roles": {"sql": "query", "fetch": None},
    }
    target = make_target(config, TargetContext(mini_world, tmp_path))
    with pytest.raises(UserInputError) as info:
        await target.start()
    assert str(info.value) == (
        "mcp:third: roles.sql: the target has no tool 'query' "
        "(it offers: execute_query, table_schema, show_tables)"
    )
    await target.stop()


async def test_the_oracle_names_a_missing_role(tmp_path: Path, mini_world: Path) -> None:
    # Without roles the server plays none of the reference names: the oracle says so.
    config = {"kind": "mcp", "name": "bare", "command": server_command(mini_world)}
    target = make_target(config, TargetContext(mini_world, tmp_path))
    await target.start()
    try:
        assert target.tool_roles.dump() == {}
        task = load_tasks([DATA / "tasks_basic.yaml"]).tasks[0]
        request = EpisodeRequest("r", "bare", task, 0, target, task.budget)
        with pytest.raises(HarnessError) as info:
            await OracleAgent(OracleAgentConfig()).run(request, EpisodeTranscript())
        assert str(info.value) == (
            "oracle: the target has no tool in the sql role (it offers: execute_query, "
            "show_tables, table_schema); set target.roles.sql"
        )
    finally:
        await target.stop()
