"""Static validation (no server) and the protocol verification helpers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dabench.journal.records import ToolCall
from dabench.runner.protocol import check_expectations, fact_found, grade_step_answer
from dabench.tasks.loader import TaskSet
from dabench.tasks.model import Grading, ProtocolStep, Task, Truth
from dabench.validation.tasks import duplicate_issues, static_checks


def _task(tid: str, prompt: str, sql: str, **grading: Any) -> Task:
    return Task.model_validate(
        {
            "id": tid,
            "suite": "s2",
            "category": "single_tool",
            "difficulty": "easy",
            "prompt": prompt,
            "grading": {"kind": "numeric", "truth_sql": sql, **grading},
        }
    )


def test_shipped_suites_have_no_static_issue(builtin: TaskSet, suites_world: Path) -> None:
    lock, issues = static_checks(builtin, suites_world)
    assert lock is not None and not issues, issues
    assert len(lock.truths) > len(builtin.tasks)  # protocols add one truth per graded step


def test_static_checks_flag_a_truth_that_ignores_a_policy(suites_world: Path) -> None:
    bad = _task("bad", "How many orders were placed in 2024?", "SELECT count(*) FROM sales.orders")
    exempt = _task(
        "exempt",
        "How many orders were placed in 2024, including test accounts?",
        "SELECT count(*) FROM sales.orders WHERE year(order_date) = 2024",
    ).model_copy(update={"tags": ["policy-exempt:test_accounts"]})
    _, issues = static_checks(TaskSet(tasks=[bad, exempt]), suites_world)
    assert [(i.item, i.check) for i in issues] == [("bad", "policy")]
    assert "'test_accounts'" in issues[0].detail and "test-accounts" in issues[0].detail


def test_static_checks_read_the_policies_from_the_world(suites_world: Path, tmp_path: Path) -> None:
    """The built world's checks come from its ``policies.yaml`` through the loader every world
    uses: a copy whose file lacks the test-account policy no longer flags the truth that
    ignores it, and a policy page that does not state the rule is named."""
    import shutil

    import yaml

    copy = tmp_path / "w"
    shutil.copytree(suites_world, copy)
    data = yaml.safe_load((copy / "policies.yaml").read_text(encoding="utf-8"))
    data["policies"] = [p for p in data["policies"] if p["id"] != "test_accounts"]
    currency = next(p for p in data["policies"] if p["id"] == "currency")
    currency["rule"] = "Report in euros."
    (copy / "policies.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    bad = _task("bad", "How many orders were placed in 2024?", "SELECT count(*) FROM sales.orders")
    _, issues = static_checks(TaskSet(tasks=[bad]), copy)
    assert [(i.item, i.check) for i in issues] == [("world", "knowledge")], issues
    assert "policy 'currency': knowledge page 'currency-policy' does not state" in issues[0].detail


def test_duplicates_need_same_sql_and_near_identical_prompt() -> None:
    a = _task("a", "How many stores are there?", "SELECT count(*) FROM sales.stores")
    b = _task("b", "How many stores are there ?", "select count(*)  from sales.stores;")
    c = _task("c", "Count the retail shops in every region.", "SELECT count(*) FROM sales.stores")
    d = _task("d", "How many stores are there?", "SELECT count(*) FROM sales.channels")
    issues = duplicate_issues([a, b, c, d])
    assert [(i.item, i.check) for i in issues] == [("a", "duplicate")]
    assert "'b'" in issues[0].detail


def test_static_checks_name_each_problem(suites_world: Path) -> None:
    trap = _task(
        "trap",
        "What is the average list price?",
        "SELECT avg(list_price) / 100.0 FROM product.products",
        wrong_aliases=["sales.no_such_table"],
    ).model_copy(update={"trap_classes": ["cents_units"], "rubric": ["caveat.unknown_thing"]})
    ts = TaskSet(tasks=[trap])
    lock, issues = static_checks(ts, suites_world)
    assert lock is not None
    found = {(i.item, i.check) for i in issues}
    assert found == {("trap", "entity"), ("trap", "rubric"), ("trap", "trap")}
    details = " | ".join(i.detail for i in issues)
    assert "sales.no_such_table" in details and "naive_sql" in details
    assert "caveat.cents_units" in details and "caveat.unknown_thing" in details


def test_a_failing_truth_is_reported_with_its_source(suites_world: Path) -> None:
    bad = _task("bad", "How many?", "SELECT count(*) FROM sales.nope")
    lock, issues = static_checks(TaskSet(tasks=[bad], sources={"bad": "x.yaml:3"}), suites_world)
    assert lock is None
    assert issues[0].check == "truth" and "x.yaml:3" in issues[0].detail


def test_protocol_steps_are_checked_by_kind() -> None:
    with pytest.raises(ValueError, match="needs a prompt"):
        ProtocolStep(kind="episode", name="teach")
    with pytest.raises(ValueError, match=r"action\.sink"):
        ProtocolStep(kind="review", name="promote", action={"sink": "description"})
    with pytest.raises(ValueError, match="needs expect"):
        ProtocolStep(kind="verify", name="captured")


STATE: dict[str, Any] = {
    "insights": [
        {"id": "i1", "status": "superseded", "captured_by": "teacher", "content": "Flag is A."},
        {"id": "i2", "status": "pending", "captured_by": "teacher", "content": "Flag is B."},
        {"id": "i3", "status": "pending", "captured_by": "teacher", "content": "flag is  b."},
    ],
    "changesets": [
        {"id": "c1", "insight_id": "i0", "sink": "description", "target": "sales.stores",
         "rolled_back": True},
    ],
    "datasets": {"sales.stores": {"description": "Stores.\n\nNote: Flag is B.",
                                  "promoted_targets": ["sales.stores"]}},
    "pages": {"missing": None},
}  # fmt: skip


def test_expectations_hold_or_say_what_differs() -> None:
    ok = {
        "insights": [{"status": "superseded", "contains": "flag is a"}],
        "dataset": {"id": "sales.stores", "contains": "Flag is B.", "promoted": True},
    }
    assert check_expectations(ok, STATE) == []
    failures = check_expectations(
        {
            "insights": {"status": "pending", "contains": "Flag is B."},
            "changesets": {"target": "sales.stores"},
            "page": {"id": "missing"},
            "columns": {},
        },
        STATE,
    )
    assert failures == [
        "expected 1 insight(s) with status=pending, contains=Flag is B., found 2",
        "expected 1 changeset(s) with target=sales.stores, found 0",
        "knowledge page missing does not exist",
        "unknown expectation 'columns' (expected one of "
        "['changesets', 'dataset', 'insights', 'page'])",
    ]


def test_fact_found_reads_successful_tool_results_only() -> None:
    def call(result: str, error: bool = False, query: str = "") -> ToolCall:
        return ToolCall(index=0, turn=0, session="s", name="search", arguments={"query": query},
                        result=result, is_error=error)  # fmt: skip

    fact = "Our flagship store is Seattle Pike."
    shown = '{"content": {"text": "our  flagship store is\\nSeattle Pike."}}'
    assert fact_found(fact, [call(shown)])
    assert not fact_found(fact, [call('{"content": "Our flagship store is Seattle"}')])
    assert not fact_found(fact, [call("Our flagship store is Seattle Pike.", error=True)])
    # A search result that only echoes the query does not show the fact.
    echo = '{"query": "Our flagship store is Seattle Pike.", "results": []}'
    assert not fact_found(fact, [call(echo, query=fact)])


def test_step_answers_use_the_deterministic_graders() -> None:
    numeric = Grading(kind="numeric", truth_sql="SELECT 1", tolerance_rel=0.0)
    truth = Truth(kind="numeric", value=2015.0, naive_value=2016.0)
    assert grade_step_answer("FINAL ANSWER: 2015", numeric, truth)[0] is True
    assert grade_step_answer("FINAL ANSWER: 2016", numeric, truth)[0] is False
    assert grade_step_answer("2015", numeric, None) == (None, "no numeric truth for this step")
    abstain = Grading(kind="abstain")
    assert grade_step_answer("I don't know.", abstain, None)[0] is True
    assert grade_step_answer("It opened in 2015.", abstain, None)[0] is False
    entity = Grading(kind="entity", entities=["customers.tier_history"])
    assert grade_step_answer("customers.tier_history", entity, None)[0] is True


def test_validation_reports_broken_tasks(suites_world: Path) -> None:
    """A gold the grader rejects, and a trap whose naive answer equals the truth, both fail."""
    from dabench.validation.tasks import validate

    good = _task("good", "How many stores are there?", "SELECT count(*) FROM sales.stores")
    self_wrong = Task.model_validate(
        {
            "id": "self-wrong",
            "suite": "s1",
            "category": "discovery",
            "difficulty": "easy",
            "prompt": "Where are orders?",
            "grading": {
                "kind": "entity",
                "entities": ["sales.orders"],
                "wrong_aliases": ["sales.orders"],
            },
        }
    )
    weak_trap = _task(
        "weak-trap",
        "How many channels are there?",
        "SELECT count(*) FROM sales.channels",
        naive_sql="SELECT 3",
    ).model_copy(update={"trap_classes": ["cents_units"], "rubric": ["caveat.cents_units"]})
    ts = TaskSet(tasks=[good, self_wrong, weak_trap])
    report = validate(suites_world, ts, arms=["a0"], progress=False)
    assert not report.ok
    found = sorted((i.item, i.check, i.arm) for i in report.issues)
    assert found == [("self-wrong", "oracle", "a0"), ("weak-trap", "naive", "a0")]
    assert {r.item: r.passed for r in report.results} == {
        "good": True, "self-wrong": False, "weak-trap": True
    }  # fmt: skip
