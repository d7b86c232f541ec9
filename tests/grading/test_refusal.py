"""Refusal and abstention graders."""

from __future__ import annotations

import pytest

from dabench.grading.refusal import check_refusal


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
