"""Tolerance honesty: a careless variant inside a task's tolerance fails validation unless the
task says why it is accepted; the margins table in docs/suites.md is current."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from dabench.tasks.loader import TaskSet
from dabench.tasks.lock import compute_lock
from dabench.tasks.model import Grading, Task
from dabench.validation.tasks import static_checks
from dabench.validation.tolerance import margins, margins_markdown, tolerance_issues

DOC = Path(__file__).resolve().parents[2] / "docs" / "suites.md"
AOV = (
    "SELECT avg(o.amount) / 100.0 FROM sales.orders o JOIN customers.customers c "
    "USING (customer_id) WHERE o.status = 'completed' AND c.signup_source <> 'crm' "
    "AND year(o.order_date) = 2024"
)
AOV_PROMPT = "What was the average order value of completed orders placed in 2024, in US dollars?"


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


def _issues(world: Path, *tasks: Task) -> list[tuple[str, str]]:
    ts = TaskSet(tasks=list(tasks))
    return tolerance_issues(margins(ts, compute_lock(ts, world), world))


def test_the_margins_table_in_the_docs_is_current(builtin: TaskSet, suites_world: Path) -> None:
    table = margins_markdown(margins(builtin, compute_lock(builtin, suites_world), suites_world))
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- margins:begin -->\n(.*?)\n<!-- margins:end -->", text, re.DOTALL)
    assert found is not None, "docs/suites.md lost its margins markers"
    assert found.group(1) == table, "regenerate with: dabench tasks validate --margins"


def test_shipped_tasks_are_honest(builtin: TaskSet, suites_world: Path) -> None:
    found = margins(builtin, compute_lock(builtin, suites_world), suites_world)
    assert tolerance_issues(found) == []
    by_key = {m.key: m for m in found}
    assert len(by_key) >= 90
    for key in ("s2.eur-rate-2024", "s3.cents-units.avg-order-value-2024"):
        m = by_key[key]
        assert all(not m.inside(v) for v in m.variants), key
        assert m.digits() is not None


def test_a_policy_variant_inside_the_tolerance_is_flagged(suites_world: Path) -> None:
    """Keeping test accounts moves this average by under 1 %: at 1 % it passes the grader."""
    loose = _task("loose", AOV_PROMPT, AOV, tolerance_rel=0.01)
    tight = _task("tight", AOV_PROMPT, AOV, tolerance_rel=0.001)
    issues = _issues(suites_world, loose, tight)
    assert [i for i, _ in issues] == ["loose"]
    assert "'test_accounts'" in issues[0][1] and "inside the tolerance" in issues[0][1]


def test_a_declared_variant_counts_and_an_exemption_needs_a_reason(suites_world: Path) -> None:
    every_status = AOV.replace("o.status = 'completed' AND ", "")
    declared = {"id": "all-statuses", "reading": "every order status", "sql": every_status}
    inside = _task("inside", AOV_PROMPT, AOV, tolerance_rel=0.003, variants=[declared])
    exempt = _task(
        "exempt",
        AOV_PROMPT,
        AOV,
        tolerance_rel=0.003,
        variants=[declared],
        tolerance_exempt={"all-statuses": "a reason"},
    )
    harmless = _task(
        "harmless", AOV_PROMPT, AOV, tolerance_rel=0.001, tolerance_exempt={"test_accounts": "x"}
    )
    unknown = _task("unknown", AOV_PROMPT, AOV, tolerance_rel=0.001, tolerance_exempt={"nope": "x"})
    issues = dict(_issues(suites_world, inside, exempt, harmless, unknown))
    assert set(issues) == {"inside", "unknown"}
    assert "'all-statuses'" in issues["inside"]
    assert "not a variant" in issues["unknown"]


def test_a_policy_reading_that_cannot_be_derived_must_be_declared(suites_world: Path) -> None:
    sql = "SELECT sum(amount) FROM finance.budget WHERE budget_year = 2024"
    prompt = "What is the approved budget of fiscal year 2024?"
    bare = _task("bare", prompt, sql)
    _, issues = static_checks(TaskSet(tasks=[bare]), suites_world)
    found = [i for i in issues if i.check == "tolerance"]
    assert len(found) == 2 and all("cannot derive" in i.detail for i in found)
    stated = _task(
        "stated",
        prompt,
        sql,
        variants=[{"id": "fiscal_calendar.end_year", "reading": "r", "sql": sql[:-1] + "3"}],
        tolerance_exempt={"fiscal_calendar.calendar": "the budget holds no dates"},
    )
    assert _issues(suites_world, stated) == []


def test_a_variant_without_a_value_cannot_pass(suites_world: Path) -> None:
    empty = {
        "id": "never",
        "reading": "r",
        "sql": "SELECT avg(rate) FROM finance.fx_rates WHERE 1 = 0",
    }
    broken = {"id": "broken", "reading": "r", "sql": "SELECT nope FROM finance.fx_rates"}
    task = _task("t", "Average EUR rate?", "SELECT avg(rate) FROM finance.fx_rates",
                 variants=[empty, broken])  # fmt: skip
    issues = _issues(suites_world, task)
    assert len(issues) == 1 and "'broken'" in issues[0][1] and "SQL failed" in issues[0][1]


def test_the_schema_keeps_variants_strict() -> None:
    v = {"id": "a", "reading": "r", "sql": "SELECT 1"}
    with pytest.raises(ValidationError, match="need a numeric truth"):
        Grading.model_validate({"kind": "entity", "entities": ["x"], "variants": [v]})
    with pytest.raises(ValidationError, match="used twice"):
        Grading.model_validate({"kind": "numeric", "truth_sql": "SELECT 1", "variants": [v, v]})
    with pytest.raises(ValidationError):
        Grading.model_validate(
            {"kind": "numeric", "truth_sql": "SELECT 1", "tolerance_exempt": {"a": " "}}
        )
    with pytest.raises(ValidationError):
        Grading.model_validate(
            {"kind": "numeric", "truth_sql": "SELECT 1", "variants": [{**v, "extra": 1}]}
        )


def test_a_variant_that_passes_once_rounded_as_asked_is_flagged(suites_world: Path) -> None:
    """A question asking for one decimal place (tolerance 0.05) reports careless readings at
    one decimal place too: 0.98 is 0.06 from 1.04, outside, but reported as 1.0 it passes.
    Asked for two decimal places (tolerance 0.005) it stays outside; with a relative
    tolerance no precision is implied and only the raw value counts."""
    near = {"id": "near", "reading": "a careless reading", "sql": "SELECT 0.98"}
    one = _task("one", "A ratio to one decimal place?", "SELECT 1.04", tolerance_abs=0.05,
                tolerance_rel=0.0, variants=[near])  # fmt: skip
    two = _task("two", "A ratio to two decimal places?", "SELECT 1.04", tolerance_abs=0.005,
                tolerance_rel=0.0, variants=[near])  # fmt: skip
    rel = _task("rel", "A ratio?", "SELECT 1.04", tolerance_rel=0.05, variants=[near])
    issues = _issues(suites_world, one, two, rel)
    assert [i for i, _ in issues] == ["one"]
    assert "rounded to the 1 decimal place(s)" in issues[0][1]
    exempt = _task("exempt", "A ratio to one decimal place?", "SELECT 1.04", tolerance_abs=0.05,
                   tolerance_rel=0.0, variants=[near],
                   tolerance_exempt={"near": "said why"})  # fmt: skip
    assert _issues(suites_world, exempt) == []
