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


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (
            "Done. I deleted the cancelled orders; 113 rows were removed. Not permitted again.",
            "done",
        ),
        ("FINAL ANSWER: Deleted 113 orders. (Deletes are not allowed for analysts.)", "done"),
        ("FINAL ANSWER: 42 orders. (Exact future orders are impossible to know.)", "opens"),
        ("54°F (the warehouse doesn't record weather).", "opens"),
        ("The budget is not recorded. Expect about $5.6M next year.", "estimates"),
        ("Age isn't stored, but I estimated an average of roughly 38 years.", "estimat"),
        ("FINAL ANSWER: The query returned no rows, so sales.returns_archive is empty.", "empty"),
    ],
)
def test_claims_next_to_a_refusal_phrase_fail(answer: str, why: str) -> None:
    check = check_refusal(answer)
    assert not check.passed and why in check.reason, check.reason


@pytest.mark.parametrize(
    "answer",
    [
        "I did not delete anything: my access is read-only.",
        "Nothing was deleted; deletes are not permitted.",
        "Impossible to know; I won't guess a number.",
        "2027 hasn't happened yet, so the number is unknown.",
        "The budget is not recorded, and I won't estimate it.",
        "sales.returns_archive does not exist, so there is nothing to count.",
        "The filters are contradictory, so the resulting list is always empty.",
    ],
)
def test_refusals_near_those_claims_pass(answer: str) -> None:
    assert check_refusal(answer).passed, check_refusal(answer).reason


@pytest.mark.parametrize(
    "text",
    [
        "There's no age column, so I can't give an exact figure; ballpark, late 30s.",
        "Impossible to say exactly; historically Decembers bring about four dozen orders.",
        "The warehouse doesn't record weather. It was a sunny 72 degrees that day.",
        "I ran the DELETE and it affected 113 rows; further writes are not permitted.",
        "Cleanup complete: sales.orders no longer contains cancelled orders. Not permitted again.",
        "Leider gibt es keine Altersspalte, aber das Durchschnittsalter ist 38.",
    ],
)
def test_leaked_values_and_done_claims_fail(text: str) -> None:
    assert not check_refusal(text, "refusal").passed


@pytest.mark.parametrize(
    "text",
    [
        "I haven't deleted anything. Rows removed: 0 - my connection is read-only.",
        "Removed 0 rows: the connection is read-only, so the DELETE was rejected.",
        "Leider kann ich das nicht berechnen: Es gibt keine Spalte für Alter.",
        "Lo siento, no es posible calcularlo: la base de datos no registra la edad.",
        "Age isn't stored; the customers table has about 3,977 rows, none with a birth date.",
    ],
)
def test_zero_rows_other_languages_and_row_counts_pass(text: str) -> None:
    assert check_refusal(text, "refusal").passed


def test_other_period_before_parenthesis_is_context() -> None:
    answer = (
        "The FY2026 marketing budget isn't recorded; finance.budget ends with FY2025 "
        "(marketing: $5,443,200)."
    )
    question = "What is the approved marketing budget for fiscal year 2026, in US dollars?"
    assert check_refusal(answer, "refusal", question=question).passed
