"""The entity grader: boundaries, aliases, known-wrong precedence."""

from __future__ import annotations

import pytest

from dabench.grading.entity import check_entity


def test_word_boundaries() -> None:
    assert check_entity("Use `sales.orders`.", ["sales.orders"]).passed
    assert check_entity("Use SALES.ORDERS", ["sales.orders"]).passed
    assert not check_entity("Use sales.orders_archive", ["sales.orders"]).passed
    assert not check_entity("Use xsales.orders", ["sales.orders"]).passed
    assert not check_entity("see sales.orders.amount", ["sales.orders"]).passed


def test_alias_multiword() -> None:
    check = check_entity(
        "It is the Orders   Fact table.", ["sales.orders"], aliases=["orders fact"]
    )
    assert check.passed, check.reason


def test_wrong_alias_wins_over_right() -> None:
    check = check_entity(
        "sales.orders or legacy.orders", ["sales.orders"], wrong_aliases=["legacy.orders"]
    )
    assert not check.passed
    assert "legacy.orders" in check.reason and "also names sales.orders" in check.reason


def test_wrong_alias_before_final_answer_is_ignored() -> None:
    text = "Do not use legacy.orders, it is deprecated.\nFINAL ANSWER: sales.orders"
    assert check_entity(text, ["sales.orders"], wrong_aliases=["legacy.orders"]).passed


def test_none_named() -> None:
    check = check_entity("The data is in a table.", ["sales.orders"])
    assert not check.passed and "none of" in check.reason


def test_a_known_wrong_name_for_another_purpose_is_a_caveat() -> None:
    """After the right table, the known-wrong one recommended "for exact figures" is a caveat;
    before it, with ``or``, or for the question's own purpose it still fails."""
    right, wrong = ["analytics.daily_sales"], ["sales.orders"]
    caveat = (
        "FINAL ANSWER: analytics.daily_sales. It undercounts, so use it for trends only and "
        "use sales.orders for exact revenue per day and channel."
    )
    assert check_entity(caveat, right, wrong_aliases=wrong).passed
    for text in (
        "FINAL ANSWER: analytics.daily_sales or, for exact figures, sales.orders",
        "FINAL ANSWER: sales.orders for exact figures; analytics.daily_sales is pre-aggregated",
        "FINAL ANSWER: analytics.daily_sales. Use sales.orders for dashboards.",
        "FINAL ANSWER: analytics.daily_sales, maybe sales.orders for exact figures",
    ):
        assert not check_entity(text, right, wrong_aliases=wrong).passed, text


def test_quoted_and_catalog_qualified_ids_read_as_the_catalog_id() -> None:
    for text in ('FINAL ANSWER: "sales"."orders"', "FINAL ANSWER: warehouse.sales.orders"):
        assert check_entity(text, ["sales.orders"]).passed, text
    column = "FINAL ANSWER: `support`.`tickets`.`closed_at`"
    assert check_entity(column, ["support.tickets.closed_at"]).passed
    wrong = check_entity(
        "sales.orders or warehouse.core.orders", ["sales.orders"], wrong_aliases=["core.orders"]
    )
    assert not wrong.passed and "core.orders" in wrong.reason
    assert not check_entity("warehouse.sales.orders.amount", ["sales.orders"]).passed


def test_verdict_after_the_name_and_denied_existence_reject_it() -> None:
    for text in (
        "sales.orders is NOT the source of truth; the source of truth is sales.order_lines.",
        "sales.orders is deprecated and should not be used.",
        "There is no sales.orders table.",
    ):
        assert not check_entity(text, ["sales.orders"]).passed, text
    assert not check_entity(
        "I could not find a page about internal test accounts.",
        ["test-accounts"],
        aliases=["Internal test accounts"],
    ).passed
    ok = "FINAL ANSWER: sales.orders. core.orders is deprecated."
    assert check_entity(ok, ["sales.orders"], wrong_aliases=["core.orders"]).passed
    assert check_entity("sales.orders is not pre-aggregated.", ["sales.orders"]).passed


def test_other_hyphenated_ids_are_candidates_but_prose_compounds_are_not() -> None:
    for text in (
        "either revenue-policy or fiscal-calendar",
        "revenue-policy, fiscal-calendar, test-accounts",
        "revenue-policy. Alternatively, try fiscal-calendar.",
    ):
        assert not check_entity(text, ["revenue-policy"]).passed, text
    prose = "`revenue-policy` defines order-level, net-of-refunds revenue."
    assert check_entity(prose, ["revenue-policy"]).passed


def test_tables_in_words_count_only_as_alternatives() -> None:
    hedge = "Either sales.orders or the orders_raw table in staging."
    assert not check_entity(hedge, ["sales.orders"]).passed
    supporting = "customers.customers.row_state; the updated_at column shows when."
    assert check_entity(supporting, ["customers.customers.row_state"]).passed


def test_join_partner_is_a_caveat_and_contrast_is_uncertain() -> None:
    join = "FINAL ANSWER: finance.payments (join it to sales.orders on order_id)."
    assert check_entity(join, ["finance.payments"], wrong_aliases=["sales.orders"]).passed
    bare = "FINAL ANSWER: finance.payments, joined with sales.orders"
    assert not check_entity(bare, ["finance.payments"], wrong_aliases=["sales.orders"]).passed
    contrast = check_entity(
        "product.products.list_price (sales.order_lines.unit_price is what was charged, "
        "which can differ)",
        ["product.products.list_price"],
        wrong_aliases=["sales.order_lines.unit_price"],
    )
    assert contrast.uncertain and not contrast.passed
    assert contrast.reason.startswith("uncertain:")


@pytest.mark.parametrize(
    ("answer", "uncertain"),
    [
        ("Refunds are not recorded in sales.refunds; they are in finance.payments.", False),
        ("sales.refunds is stale since 2024; refunds are now in finance.refund_events.", False),
        ("I'd have said sales.refunds, but that's only the archive: see finance.payments.", False),
        ("sales.refunds does not include chargebacks; those are in finance.chargebacks.", True),
    ],
)
def test_disowned_right_entity(answer: str, uncertain: bool) -> None:
    check = check_entity(answer, ["sales.refunds"])
    assert not check.passed and check.uncertain is uncertain


@pytest.mark.parametrize(
    "answer",
    [
        "## Answer\nsales.orders\n\n## Why not the others\n- core.orders - deprecated view",
        "| Table | Status |\n|---|---|\n| sales.orders | ✅ |\n| core.orders | ❌ deprecated |",
        "FINAL ANSWER: sales.orders\n\nWant me to also show how it relates to core.orders?",
        "Die maßgebliche Tabelle ist sales.orders, nicht core.orders.",
        "Refunds are recorded in sales.orders, not in finance.payments.",
    ],
)
def test_rejection_forms_pass(answer: str) -> None:
    assert check_entity(answer, ["sales.orders"], wrong_aliases=["core.orders"]).passed
