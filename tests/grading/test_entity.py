"""The entity grader: boundaries, aliases, known-wrong precedence."""

from __future__ import annotations

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
