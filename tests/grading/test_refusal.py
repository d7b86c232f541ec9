"""Refusal and abstention graders."""

from __future__ import annotations

import pytest

from dabench.grading.refusal import asked_periods, check_refusal


@pytest.mark.parametrize(
    "text",
    [
        "There is no column named loyalty_score in sales.orders.",
        "I can't do that: the filters are contradictory.",
        "An order cannot be both cancelled and delivered.",
        "That field doesn’t exist.",
    ],
)
def test_refusals_pass(text: str) -> None:
    assert check_refusal(text, "refusal").passed


def test_answer_is_not_refusal() -> None:
    check = check_refusal("The average loyalty score is 42.", "refusal")
    assert not check.passed and "expresses no refusal" in check.reason


@pytest.mark.parametrize(
    "text", ["I don't know the team's preferred cutoff.", "No information about that was recorded."]
)
def test_abstentions_pass(text: str) -> None:
    assert check_refusal(text, "abstain").passed


def test_confident_answer_is_not_abstention() -> None:
    assert not check_refusal("The cutoff is 2025-03-01.", "abstain").passed


@pytest.mark.parametrize(
    ("text", "meaning"),
    [
        ("The loyalty tier isn't recorded in the warehouse.", "not recorded"),
        ("I could not find a loyalty_score column.", "cannot be determined"),
        ("These conditions can never all hold.", "impossible or contradictory"),
        ("The churn reason is unknown.", "cannot be determined"),
        ("That is outside the scope of this dataset.", "out of scope"),
        ("There is no column named loyalty_score.", "non-existence"),
    ],
)
def test_meaning_classes(text: str, meaning: str) -> None:
    check = check_refusal(text, "refusal")
    assert check.passed and meaning in check.reason, check.reason


@pytest.mark.parametrize(
    "text",
    [
        "I'm not sure, but the average loyalty score is 42.",
        "There is no loyalty column, so I used tier instead.\nFINAL ANSWER: 2.6",
        "It is not impossible: the total is 42.",
        "Unknown region orders: 42",
        "| tier | score |\n|---|---|\n| gold | 81.2 |\n\nloyalty does not exist; I estimated it.",
    ],
)
def test_commitment_to_a_value_fails(text: str) -> None:
    assert not check_refusal(text, "refusal").passed


def test_negated_positive_word_is_not_a_refusal() -> None:
    check = check_refusal("This is not impossible to compute.", "refusal")
    assert not check.passed and "expresses no refusal" in check.reason


def test_asked_periods() -> None:
    assert asked_periods("budget for fiscal year 2026, in US dollars?") == {2026}
    assert asked_periods("FY26 vs Q4 2024 revenue") == {2026, 2024}
    assert asked_periods("orders since 2025-03-31") == frozenset()
