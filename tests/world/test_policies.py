"""The declared analysis policies: their scope is on the pages, and the SQL check catches a
truth that ignores one."""

from __future__ import annotations

import pytest

from dabench.world import World
from dabench.world.metrics import ACTIVE, NOT_TEST, revenue_orders
from dabench.world.policies import POLICIES, policy, policy_issues, scope_markdown


def test_every_policy_states_its_scope_on_its_page(world: World) -> None:
    for p in POLICIES:
        body = world.page(p.page).body
        assert scope_markdown(p.id) in body, p.id
        assert "Does **not** apply to" in body, p.id


def test_unknown_policy_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="unknown policy 'nope'"):
        policy("nope")


def test_world_traps_apply_every_policy_in_scope(world: World) -> None:
    for trap in world.traps:
        assert policy_issues(trap.correct_sql, trap.question, []) == [], trap.id


def test_orders_without_the_test_account_filter_are_flagged() -> None:
    issues = policy_issues("SELECT count(*) FROM sales.orders", "How many orders in 2024?", [])
    assert len(issues) == 1 and "'test_accounts'" in issues[0]
    ok = (
        "SELECT count(*) FROM sales.orders o JOIN customers.customers c USING (customer_id) "
        f"WHERE {NOT_TEST}"
    )
    assert policy_issues(ok, "How many orders in 2024?", []) == []


def test_out_of_scope_tables_are_not_flagged() -> None:
    sql = "SELECT count(*) FROM support.tickets t JOIN customers.customers c USING (customer_id)"
    assert policy_issues(sql, "How many tickets?", []) == []


def test_customer_counts_need_both_customer_policies() -> None:
    issues = policy_issues("SELECT count(*) FROM customers.customers c", "How many?", [])
    assert sorted(i.split("'")[1] for i in issues) == ["erased_accounts", "test_accounts"]
    sql = f"SELECT count(*) FROM customers.customers c WHERE {ACTIVE} AND {NOT_TEST}"
    assert policy_issues(sql, "How many?", []) == []


def test_revenue_totals_keep_erased_accounts_but_breakdowns_do_not() -> None:
    total = f"SELECT sum(revenue_cents) FROM ({revenue_orders()}) r WHERE year(order_date) = 2025"
    assert policy_issues(total, "What was revenue in 2025?", []) == []
    by_tier = total + " AND tier IN ('gold', 'platinum')"
    issues = policy_issues(by_tier, "What was revenue of gold customers in 2025?", [])
    assert len(issues) == 1 and "'erased_accounts'" in issues[0]


def test_an_exemption_must_be_stated_in_the_prompt() -> None:
    sql = "SELECT count(*) FROM sales.orders"
    tag = ["policy-exempt:test_accounts"]
    assert policy_issues(sql, "How many orders, including test accounts?", tag) == []
    issues = policy_issues(sql, "How many orders?", tag)
    assert len(issues) == 1 and "prompt does not say so" in issues[0]
    assert policy_issues(sql, "x", ["policy-exempt:nope"])[0].startswith("unknown policy")


def test_dollar_questions_on_cents_columns_need_the_division() -> None:
    sql = "SELECT avg(list_price) FROM product.products"
    assert "'money_units'" in policy_issues(sql, "Average price in US dollars?", [])[0]
    assert policy_issues(sql + " / 100.0", "Average price in US dollars?", []) == []
    assert policy_issues(sql, "Average price in cents?", []) == []


def test_reporting_from_a_non_reporting_table_is_flagged() -> None:
    sql = "SELECT sum(orders) FROM analytics.daily_sales"
    assert "'reporting_sources'" in policy_issues(sql, "How many orders?", [])[0]
