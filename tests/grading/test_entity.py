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
