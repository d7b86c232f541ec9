"""grade_episode without a judge: headline verdicts, exclusions, failures, scores."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.grading.builders import make_episode, make_task, sql_call

from dabench.grading import grade_episode, grade_protocol_episode
from dabench.grading.tools import check_tool_overlap
from dabench.journal.records import StepRecord, ToolCall
from dabench.tasks.model import Truth

NUMERIC = make_task({"kind": "numeric", "truth_sql": "SELECT 1"}, expected_tools=["sql_query"])
TRUTH = Truth(kind="numeric", value=1234.5)


def test_numeric_pass_has_reason_and_scores() -> None:
    ep = make_episode("FINAL ANSWER: $1,234.50", tool_calls=[sql_call(0, "SELECT 1")])
    grade = grade_episode(ep, NUMERIC, TRUTH)
    assert grade.passed and grade.score == 1.0 and not grade.excluded
    assert "$1,234.50" in grade.reason
    assert grade.scores["correctness"] == 1.0 and grade.scores["tool"] == 1.0
    assert grade.scores["latency"] == 1.0 and "cost" not in grade.scores
    assert grade.scores["overall"] == pytest.approx(1.0)
    assert [c.name for c in grade.checks] == ["numeric", "tool_overlap"]
    assert grade.rubric_version is None and grade.judge is None


def test_numeric_fail_scores_and_tool_miss() -> None:
    ep = make_episode(
        "FINAL ANSWER: 99",
        tool_calls=[ToolCall(index=0, name="search", is_error=True), sql_call(1, "SELECT 1")],
        wall_ms=62_500.0,
        cost_usd=0.0505,
    )
    grade = grade_episode(ep, NUMERIC, TRUTH)
    assert not grade.passed and grade.score == 0.0
    assert grade.scores["error_rate"] == 0.5
    assert grade.scores["latency"] == pytest.approx(0.5)
    assert grade.scores["cost"] == pytest.approx(0.5)
    # overall = (0.35*0 + 0.10*1 + 0.05*0.5 + 0.05*0.5 + 0.05*0.5) / 0.60
    assert grade.scores["overall"] == pytest.approx((0.10 + 3 * 0.025) / 0.60)


def test_harness_error_is_excluded_not_failed() -> None:
    ep = make_episode(None, status="harness_error", harness_error="provider 503 after 5 retries")
    grade = grade_episode(ep, NUMERIC, TRUTH)
    assert grade.excluded and not grade.passed
    assert "provider 503" in grade.reason and "not a model failure" in grade.reason


@pytest.mark.parametrize("status", ["timeout", "budget_exhausted", "no_answer"])
def test_model_failures_are_failures(status: str) -> None:
    ep = make_episode("FINAL ANSWER: 1234.5", status=status)
    grade = grade_episode(ep, NUMERIC, TRUTH)
    assert not grade.passed and not grade.excluded
    assert grade.reason.startswith(f"model failure: {status}")
    assert grade.scores["overall"] == 0.0


def test_missing_truth_is_excluded() -> None:
    grade = grade_episode(make_episode("1"), NUMERIC, None)
    assert grade.excluded and "no numeric truth" in grade.reason


def test_multi_turn_grades_last_answer() -> None:
    task = make_task({"kind": "numeric", "truth_sql": "SELECT 1"}, prompt=None, turns=["a", "b"])
    ep = make_episode("x", answers=["FINAL ANSWER: 1234.5", "FINAL ANSWER: 7"], prompts=["a", "b"])
    assert not grade_episode(ep, task, TRUTH).passed
    ep2 = make_episode("x", answers=["FINAL ANSWER: 7", "FINAL ANSWER: 1234.5"], prompts=["a", "b"])
    assert grade_episode(ep2, task, TRUTH).passed


def test_format_with_also_numeric() -> None:
    task = make_task(
        {
            "kind": "format",
            "truth_sql": "SELECT 1",
            "also_numeric": True,
            "format": {"kind": "single_number"},
        },
        category="format",
    )
    right = grade_episode(make_episode("1,234.5"), task, TRUTH)
    assert right.passed and right.scores["format"] == 1.0
    wrong_format = grade_episode(make_episode("It is 1,234.5"), task, TRUTH)
    assert not wrong_format.passed and wrong_format.scores["format"] == 0.0
    wrong_number = grade_episode(make_episode("1,000"), task, TRUTH)
    assert not wrong_number.passed and wrong_number.scores["format"] == 1.0


def test_entity_and_refusal_kinds() -> None:
    entity = make_task(
        {"kind": "entity", "entities": ["sales.orders"], "wrong_aliases": ["legacy.orders"]},
        suite="s1",
        category="discovery",
    )
    truth = Truth(kind="entity", entities=["sales.orders"])
    assert grade_episode(make_episode("sales.orders"), entity, truth).passed
    assert not grade_episode(make_episode("legacy.orders"), entity, truth).passed
    refusal = make_task({"kind": "refusal"}, category="adversarial")
    assert grade_episode(make_episode("That column does not exist."), refusal, None).passed
    assert not grade_episode(make_episode("The average is 7."), refusal, None).passed


def test_exec_sql_through_grade_episode(warehouse: Path) -> None:
    task = make_task({"kind": "exec_sql", "truth_sql": "SELECT 1", "exec_sql_mode": "multiset"})
    truth = Truth(kind="exec_sql", columns=["n"], rows=[[5]])
    ep = make_episode("x", tool_calls=[sql_call(0, "SELECT COUNT(*) FROM sales.orders")])
    grade = grade_episode(ep, task, truth, warehouse=warehouse)
    assert grade.passed, grade.reason
    assert "multiset" in grade.reason
    no_world = grade_episode(ep, task, truth)
    assert no_world.excluded and "--world" in no_world.reason


def test_protocol_episode() -> None:
    steps = [
        StepRecord(name="teach", kind="episode", identity="teacher", passed=True),
        StepRecord(
            name="recall", kind="episode", identity="learner", passed=False, detail="forgot"
        ),
        StepRecord(name="review", kind="review", identity="reviewer"),
    ]
    grade = grade_protocol_episode(make_episode("", steps=steps))
    assert not grade.passed and "recall" in grade.reason
    ok = grade_protocol_episode(make_episode("", steps=steps[:1]))
    assert ok.passed and ok.kind == "protocol"


def test_tool_overlap_accepts_other_stacks_equivalents() -> None:
    esql = ToolCall(index=0, name="platform.core.execute_esql")
    check = check_tool_overlap(make_episode("x", tool_calls=[esql]), ["sql_query"])
    assert check.passed and "platform.core.execute_esql" in check.reason
    other = ToolCall(index=0, name="platform.core.get_index_mapping")
    assert not check_tool_overlap(make_episode("x", tool_calls=[other]), ["sql_query"]).passed


def test_refusal_grader_gets_the_task_prompt() -> None:
    """Another period's value is context only against the asked period (the task's prompt)."""
    answer = (
        "Not available: no FY2026 budget is recorded; the table ends at FY2025 (FY2025 = $5.4M)."
    )
    asked_2026 = make_task(
        {"kind": "refusal"}, category="adversarial", prompt="The FY2026 budget, in USD?"
    )
    asked_2025 = make_task(
        {"kind": "refusal"}, category="adversarial", prompt="The FY2025 budget, in USD?"
    )
    assert grade_episode(make_episode(answer), asked_2026, None).passed
    assert not grade_episode(make_episode(answer), asked_2025, None).passed
