"""The declared analysis policies: written into the built world as data, their scope is on the
pages, and the SQL check catches a truth that ignores one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb
import pytest

from dabench.world import World
from dabench.world.consistency import consistency_issues
from dabench.world.metrics import ACTIVE, NOT_TEST, revenue_orders
from dabench.world.model import Catalog
from dabench.world.policies import POLICIES, policy
from dabench.world.policy_data import DataPolicy, ignore, scope_markdown
from dabench.world.policy_data import ignored_readings as _ignored_readings
from dabench.world.policy_data import policy_issues as _policy_issues
from dabench.world.source import open_world


def policy_issues(sql: str, prompt: str, tags: list[str]) -> list[str]:
    """The built-in policies' issues with a truth SQL."""
    return _policy_issues(POLICIES, sql, prompt, tags)


def ignored_readings(sql: str, prompt: str, tags: list[str]) -> list[object]:
    return list(_ignored_readings(POLICIES, sql, prompt, tags))


def test_the_built_world_holds_the_policies_as_data(world: World) -> None:
    """The generator writes its policies in the knowledge format; the loader every world goes
    through reads back exactly them, and the world hash does not cover the file."""
    opened = open_world(world.path)
    assert tuple(opened.policies) == POLICIES
    assert "policies.yaml" not in world.manifest.files
    assert world.manifest.policies_sha256 is not None
    assert all(isinstance(p, DataPolicy) for p in opened.policies)


def test_every_policy_states_its_scope_on_its_page(world: World) -> None:
    for p in POLICIES:
        body = world.page(p.page).body
        assert scope_markdown(p) in body, p.id
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


# -- the executable form: switching a policy off, and the knowledge layer agreeing with it -------

TRAP_READING = {
    "test_accounts": "test_accounts",
    "soft_deleted": "erased_accounts",
    "cents_units": "money_units",
    "currency_conversion": "currency",
    "duplicate_events": "unique_events",
    "timezone_change": "company_local_time",
    "tier_definition": "key_accounts",
    "fiscal_calendar": "fiscal_calendar.calendar",
    "net_revenue": "revenue.refunds",
}
"""The careless reading that each trap class's naive SQL stands for."""


def test_ignoring_a_policy_gives_the_naive_answer_of_its_traps(world: World) -> None:
    """Each trap's naive SQL is its correct SQL with one fact left out: rewriting the correct
    SQL with that policy switched off must give the same number."""
    readings = {r.id: r for p in POLICIES for r in p.ignored}
    con = duckdb.connect(str(world.path / "warehouse.duckdb"), read_only=True)
    checked = 0
    try:
        for trap in world.traps:
            reading = readings.get(TRAP_READING.get(trap.trap_class, ""))
            if reading is None:
                continue
            sql = ignore(reading, trap.correct_sql)
            assert sql is not None, trap.id
            row = con.execute(sql).fetchone()
            assert row is not None and row[0] is not None, trap.id
            assert float(row[0]) == pytest.approx(trap.naive_answer, rel=1e-9), trap.id
            checked += 1
    finally:
        con.close()
    assert checked >= 20


def test_a_reading_that_matches_nothing_is_none() -> None:
    assert ignore(policy("money_units").ignored[0], "SELECT count(*) FROM sales.orders") is None
    readings = ignored_readings(
        "SELECT count(*) FROM sales.orders", "How many orders?", ["policy-exempt:test_accounts"]
    )
    assert readings == []


def test_fiscal_readings_shift_period_boundaries() -> None:
    sql = "SELECT 1 WHERE d BETWEEN DATE '2024-02-01' AND DATE '2025-01-31'"
    calendar_year, end_year = policy("fiscal_calendar").ignored
    assert ignore(calendar_year, sql) == (
        "SELECT 1 WHERE d BETWEEN DATE '2024-01-01' AND DATE '2024-12-31'"
    )
    assert ignore(end_year, sql) == (
        "SELECT 1 WHERE d BETWEEN DATE '2023-02-01' AND DATE '2024-01-31'"
    )


def test_revenue_readings_rebuild_the_monthly_aggregate(world: World) -> None:
    sql = "SELECT sum(revenue) FROM analytics.monthly_revenue WHERE year(month) = 2025"
    con = duckdb.connect(str(world.path / "warehouse.duckdb"), read_only=True)
    try:
        truth = con.execute(sql).fetchone()
        for reading in policy("revenue").ignored:
            variant = ignore(reading, sql)
            assert variant is not None and "analytics.monthly_revenue" not in variant
            assert con.execute(variant).fetchone() != truth, reading.id
    finally:
        con.close()


def _run(con: duckdb.DuckDBPyConnection) -> Callable[[str], list[list[Any]]]:
    """What ``consistency_issues`` runs its SQL with, over a DuckDB connection."""
    return lambda sql: [list(row) for row in con.execute(sql).fetchall()]


def test_knowledge_layer_agrees_with_the_policies(world: World) -> None:
    con = duckdb.connect(str(world.path / "warehouse.duckdb"), read_only=True)
    try:
        assert consistency_issues(POLICIES, world.catalog, world.pages, _run(con)) == []
    finally:
        con.close()


def _with(world: World, **changes: Callable[[dict[str, Any]], None]) -> Catalog:
    """The world's catalog with each change applied to its JSON form (records are frozen)."""
    data = world.catalog.model_dump()
    for change in changes.values():
        change(data)
    return Catalog.model_validate(data)


def _find(items: list[dict[str, Any]], key: str, value: str) -> dict[str, Any]:
    return next(i for i in items if i[key] == value)


def test_the_old_key_account_texts_are_flagged(world: World) -> None:
    """Generator 2.1.0's tier description and curated query description gave the old rule
    (gold or platinum, any segment): the check names both texts."""

    def tier(catalog: dict[str, Any]) -> None:
        ds = _find(catalog["datasets"], "id", "customers.customers")
        _find(ds["columns"], "name", "tier")["description"] = (
            "Current loyalty tier: bronze, silver, gold or platinum. Gold and platinum "
            "customers are key accounts."
        )

    def query(catalog: dict[str, Any]) -> None:
        q = _find(catalog["curated_queries"], "id", "key-accounts")
        q["description"] = "The current key accounts (tier gold or platinum)."

    con = duckdb.connect(str(world.path / "warehouse.duckdb"), read_only=True)
    try:
        issues = consistency_issues(
            POLICIES, _with(world, tier=tier, query=query), world.pages, _run(con)
        )
    finally:
        con.close()
    text = "\n".join(issues)
    assert "catalog:customers.customers.tier does not state the rule" in text
    assert "query:key-accounts does not state the rule" in text
    assert "catalog:customers.customers.tier defines key accounts without the rule" in text
    assert all("'key_accounts'" in i for i in issues)


def test_a_curated_query_that_computes_another_set_is_flagged(world: World) -> None:
    def narrower(catalog: dict[str, Any]) -> None:
        q = _find(catalog["curated_queries"], "id", "key-accounts")
        q["sql"] = q["sql"].replace("ORDER BY", "AND c.region = 'West' ORDER BY")

    def wrong_rule(catalog: dict[str, Any]) -> None:
        q = _find(catalog["curated_queries"], "id", "customer-count")
        q["sql"] = "SELECT count(*) AS customers FROM customers.customers c"

    con = duckdb.connect(str(world.path / "warehouse.duckdb"), read_only=True)
    try:
        issues = consistency_issues(
            POLICIES, _with(world, narrower=narrower, wrong_rule=wrong_rule), world.pages, _run(con)
        )
    finally:
        con.close()
    assert any("'key-accounts' returns" in i and "missing" in i for i in issues), issues
    assert "policy 'test_accounts': curated query 'customer-count' does not apply it" in issues
