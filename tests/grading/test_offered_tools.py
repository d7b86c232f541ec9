"""An expected tool the arm's profile does not offer is never counted against the arm."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.grading.builders import make_episode, make_task, sql_call

from dabench.grading import grade_episode
from dabench.grading.tool_equivalents import manifest_offered_tools, offered_expected_tools
from dabench.journal.records import RunManifest, ToolCall
from dabench.tasks.model import Truth

ENTITY = make_task(
    {"kind": "entity", "entities": ["revenue-policy"]}, expected_tools=["search", "fetch"]
)
A0_TOOLS = ["describe_table", "list_tables", "sql_query"]
A2_TOOLS = [*A0_TOOLS, "fetch", "search"]


def test_offered_expected_tools() -> None:
    assert offered_expected_tools(["search", "fetch"], None) == ["search", "fetch"]
    assert offered_expected_tools(["search", "fetch"], A0_TOOLS) == []
    assert offered_expected_tools(["search", "sql_query"], A0_TOOLS) == ["sql_query"]
    # An equivalent of another stack offers the role (Elastic's search plays `search`).
    assert offered_expected_tools(["search"], ["platform.core.search"]) == ["search"]


def test_tool_score_only_counts_offered_tools() -> None:
    ep = make_episode("FINAL ANSWER: revenue-policy", tool_calls=[sql_call(0, "SELECT 1")])
    truth = Truth(kind="entity", entities=["revenue-policy"])
    unknown = grade_episode(ep, ENTITY, truth)  # offered tools unknown: all expected count
    assert unknown.scores["tool"] == 0.0
    assert [c.name for c in unknown.checks] == ["entity", "tool_overlap"]
    a0 = grade_episode(ep, ENTITY, truth, offered_tools=A0_TOOLS)
    assert a0.passed and "tool" not in a0.scores
    assert [c.name for c in a0.checks] == ["entity"]
    assert a0.scores["overall"] > unknown.scores["overall"]
    # An arm that offers search and does not use it still loses the tool score.
    a2 = grade_episode(ep, ENTITY, truth, offered_tools=A2_TOOLS)
    assert a2.scores["tool"] == 0.0
    used = make_episode(
        "FINAL ANSWER: revenue-policy", tool_calls=[ToolCall(index=0, name="search")]
    )
    assert grade_episode(used, ENTITY, truth, offered_tools=A2_TOOLS).scores["tool"] == 1.0


def test_manifest_offered_tools() -> None:
    manifest = RunManifest(
        run_id="r",
        dabench_version="0",
        git_commit=None,
        python_version="3",
        experiment={},
        experiment_hash="h",
        world_seed=1,
        world_scale=1,
        world_hash="w",
        task_set_hash="t",
        task_ids=[],
        k=1,
        arms=[{"name": "a0", "tools": A0_TOOLS}, {"name": "kb"}],
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert manifest_offered_tools(manifest) == {"a0": A0_TOOLS}
    assert manifest_offered_tools(None) == {}
