"""The numeric grader and the number parser."""

from __future__ import annotations

import pytest

from dabench.grading.numbers import find_all_numbers, find_numbers, is_single_number
from dabench.grading.numeric import (
    asked_currency,
    asked_decimals,
    asked_form,
    check_numeric,
    normalised,
    words_read,
)


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("Total: $1,234.50", [1234.5]),
        ("12.5% of orders", [12.5]),
        ("change of -42 and −7", [-42.0, -7.0]),
        ("-$3 or $-4", [-3.0, -4.0]),
        ("about 3 million and 1.2k", [3_000_000.0, 1200.0]),
        ("on 2025-03-31 we had 17", [17.0]),
        ("FY2024 Q3 v1.2 top-5", [5.0]),
        ("1,234,567.89.", [1234567.89]),
        ("about 2.60037e+06 or 3E-2", [2600370.0, 0.03]),
        ("($42,350.00) and (42,350) and 42,350.00 CR", [-42350.0, -42350.0, -42350.0]),
        ("42,350.00 DR in (2024)", [42350.0, 2024.0]),
        ("$1.23k ($1,234.50)", [1230.0, 1234.5]),
        ("$1.2346 × 10^6 and 2 x 10^-2", [1234600.0, 0.02]),
        ("1,0819 but 1,081", [1.0819, 1081.0]),
        ("108.19 US cents per euro", [1.0819]),
        ("one point two three million dollars", [1_230_000.0]),
        ("Four thousand, eight hundred and twenty-one orders", [4821.0]),
        ("one of the twelve tables at noon", [12.0]),
        ("12:00–12:59, 13:00 and 12:30", [12.0, 13.0, 12.0, 30.0]),
    ],
)
def test_find_numbers(text: str, values: list[float]) -> None:
    assert [m.value for m in find_numbers(text)] == pytest.approx(values)


def test_single_number() -> None:
    assert is_single_number(" **$1,234** ") is not None
    assert is_single_number("42 rows") is None
    assert is_single_number("42.") is None
    assert is_single_number("1 and 2") is None


def test_thousands_separator_and_currency_pass() -> None:
    check = check_numeric("Revenue was $1,234.50.", 1234.5)
    assert check.passed, check.reason
    assert "$1,234.50" in check.reason


def test_tolerance_relative_and_absolute() -> None:
    assert check_numeric("1000", 1004.0, tolerance_rel=0.005).passed
    assert not check_numeric("1000", 1006.0, tolerance_rel=0.005).passed
    assert check_numeric("1000", 1006.0, tolerance_abs=10, tolerance_rel=0).passed
    assert not check_numeric("1000.5", 1000.0, tolerance_abs=0, tolerance_rel=0).passed


def test_percentage_reads_as_fraction_too() -> None:
    assert check_numeric("12.5%", 0.125, tolerance_rel=0.001).passed
    assert check_numeric("12.5%", 12.5, tolerance_rel=0.001).passed


def test_negative_numbers() -> None:
    assert check_numeric("The change is -42.", -42.0).passed
    assert not check_numeric("The change is 42.", -42.0).passed


def test_final_answer_line_wins_over_earlier_text() -> None:
    text = "The raw sum is 123,450 but that is in cents.\nFINAL ANSWER: $1,234.50"
    assert check_numeric(text, 1234.5).passed
    wrong = "I first computed 1,234.50 but then rechecked.\n**Final answer:** 123,450"
    check = check_numeric(wrong, 1234.5)
    assert not check.passed
    assert "final-answer line" in check.reason


def test_final_answer_on_next_line() -> None:
    assert check_numeric("FINAL ANSWER:\n\n  42\n", 42.0).passed


def test_naive_value_fails_and_hedge_fails() -> None:
    check = check_numeric("FINAL ANSWER: 123450", 1234.5, naive=123450.0)
    assert not check.passed and "known-wrong" in check.reason
    hedge = check_numeric("Either 1,234.50 or 123,450", 1234.5, naive=123450.0)
    assert not hedge.passed and "hedge" in hedge.reason
    ok = check_numeric("It is 123,450 cents.\nFINAL ANSWER: 1234.50", 1234.5, naive=123450.0)
    assert ok.passed


def test_no_number() -> None:
    check = check_numeric("I could not compute it.", 10.0)
    assert not check.passed and "no number" in check.reason


def test_reasons_never_use_exponent_notation() -> None:
    check = check_numeric("FINAL ANSWER: 2,600,370.36", 435348.810732, naive=2600370.36)
    assert not check.passed
    assert "2,600,370.36" in check.reason and "e+" not in check.reason


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("1 234 567", [1234567.0]),
        ("1\u202f234\u202f567 and 1\u2009234", [1234567.0, 1234.0]),
        ("1'234'567.50", [1234567.5]),
        ("12,34,567 and 1,00,000.50", [1234567.0, 100000.5]),
        ("1.234.567 and 1.234,50 €", [1234567.0, 1234.5]),
        ("3 lakh", [300000.0]),
    ],
)
def test_locale_groupings(text: str, values: list[float]) -> None:
    assert [m.value for m in find_numbers(text)] == pytest.approx(values)


def test_ambiguous_groupings_stay_unparsed_in_a_comma_decimal_text() -> None:
    mentions = find_all_numbers("moyenne 12,5 ; total 1.234 ; autre 1,234")
    assert [(m.text, m.ambiguous) for m in mentions] == [
        ("12,5", False),
        ("1.234", True),
        ("1,234", True),
    ]
    assert mentions[0].value == 12.5 and mentions[1].readings() == ()
    # Without a comma decimal elsewhere the English readings hold.
    assert [m.value for m in find_numbers("1,234 and 1.234")] == [1234.0, 1.234]
    check = check_numeric("Le total est de 1.234 € (moyenne 12,5 €).", 1234.0)
    assert not check.passed and "ambiguous" in check.reason


def test_concluding_statement_not_any_number() -> None:
    text = "I first summed gross revenue: 1,234.50.\n\nAfter refunds, net revenue is 1,100.00."
    assert not check_numeric(text, 1234.5).passed
    assert check_numeric(text, 1100.0).passed
    note = "Net revenue is $1,234.50.\n\nNote: 3 orders had NULL amounts."
    assert check_numeric(note, 1234.5).passed


def test_hedges_and_intermediate_figures_fail() -> None:
    hedge = check_numeric("Net revenue was $1,234.50 (or $1,300.00 if refunds count).", 1234.5)
    assert not hedge.passed and "hedges" in hedge.reason
    assert not check_numeric("Revenue was between 1,200 and 1,300.", 1234.5).passed
    assert not check_numeric("FINAL ANSWER: 1,234.50-1,300", 1234.5).passed
    mid = check_numeric("Gross is $1,234.50; net is $1,100.00.", 1234.5)
    assert not mid.passed and "intermediate" in mid.reason
    assert check_numeric("Revenue was $1,234.50, up from $1,100.00.", 1234.5).passed
    assert check_numeric("Revenue was about $1.23k.", 1234.5).passed  # a restatement
    denied = check_numeric("Revenue is not $1,234.50; it's $1,100.", 1234.5)
    assert not denied.passed and "denies" in denied.reason


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("$5", "USD"),
        ("US$5", "USD"),
        ("USD 5", "USD"),
        ("5 dollars", "USD"),
        ("€5", "EUR"),
        ("5 EUR", "EUR"),
        ("5 euros", "EUR"),
        ("₹2,68,405.99", "INR"),
        ("CAD 25,331.43", "CAD"),
        ("C$25,331.43", "CAD"),
        ("CA$25,331.43", "CAD"),
        ("$25,331.43 CAD", "CAD"),
        ("25,331.43 Canadian dollars", "CAD"),
        ("5 kronor", "SEK"),
        ("5 orders", None),
    ],
)
def test_currency_of_a_number(text: str, code: str | None) -> None:
    assert find_numbers(text)[0].currency_code == code


@pytest.mark.parametrize(
    ("question", "code"),
    [
        ("What was revenue in March 2025, in US dollars?", "USD"),
        ("Net revenue of the EMEA web store, in USD?", "USD"),
        ("Total revenue of the Lyon store in March (EUR)?", "EUR"),
        ("What was revenue in euros?", "EUR"),
        ("What was the average EUR exchange rate (US dollars per euro) over 2024?", None),
        ("How many orders were placed?", None),
        ("Revenue in USD and in EUR?", None),
        ("Key-account revenue expressed in Canadian dollars. What was it, in CAD?", "CAD"),
        ("What was revenue in Swedish kronor?", "SEK"),
    ],
)
def test_asked_currency(question: str, code: str | None) -> None:
    assert asked_currency(question) == code


def test_currency_rule_and_uncertain_currency() -> None:
    asked = check_numeric("FINAL ANSWER: €1,234.50", 1234.5, currency="USD")
    assert not asked.passed and not asked.uncertain and "asks for USD" in asked.reason
    unasked = check_numeric("FINAL ANSWER: €1,234.50", 1234.5)
    assert not unasked.passed and unasked.uncertain and unasked.reason.startswith("uncertain:")
    assert check_numeric("FINAL ANSWER: 1 234,50 €", 1234.5, currency="EUR").passed


def test_several_values_are_uncertain_but_a_hedge_fails() -> None:
    several = check_numeric("4,821 orders were placed by 3,977 customers.", 4821, tolerance_rel=0)
    assert several.uncertain and not several.passed
    hedge = check_numeric("FINAL ANSWER: 4,821 or 4,835", 4821, tolerance_rel=0)
    assert not hedge.uncertain and not hedge.passed and "hedges" in hedge.reason


def test_an_amount_in_the_asked_currency_passes_and_another_fails() -> None:
    """Blind S6 play (s6.key-account-revenue-cad-fh1-fy2025): a question asked in Canadian
    dollars accepts the amount written in CAD (or with a bare $), and fails it in US dollars;
    a question asked in US dollars fails the same amount written in CAD."""
    cad = asked_currency("What was it, expressed in Canadian dollars, in CAD?")
    truth, naive = 25331.429086878987, 18640.29
    for ok in ("CAD 25,331.43", "C$25,331.43", "$25,331.43 CAD", "$25,331.43", "25,331.43"):
        check = check_numeric(f"FINAL ANSWER: {ok}", truth, tolerance_rel=0.001, currency=cad)
        assert check.passed, (ok, check.reason)
    for wrong in ("USD 25,331.43", "US$25,331.43", "25,331.43 US dollars"):
        check = check_numeric(f"FINAL ANSWER: {wrong}", truth, tolerance_rel=0.001, currency=cad)
        assert not check.passed and "asks for CAD" in check.reason, wrong
    assert not check_numeric(
        "FINAL ANSWER: CAD 18,640.29", truth, tolerance_rel=0.001, naive=naive, currency=cad
    ).passed
    usd = asked_currency("What was revenue, in US dollars?")
    check = check_numeric("FINAL ANSWER: CAD 25,331.43", truth, tolerance_rel=0.001, currency=usd)
    assert not check.passed and "asks for USD" in check.reason


def test_asked_decimals_reads_half_a_unit_of_the_last_place() -> None:
    assert asked_decimals(0.5, 0.0) == 0
    assert asked_decimals(0.05, 0.0) == 1
    assert asked_decimals(0.005, 0.0) == 2
    assert asked_decimals(0.0000005, 0.0) == 6
    assert asked_decimals(0.01, 0.0) is None  # not half a unit: no precision implied
    assert asked_decimals(0.0, 0.0) is None  # exact
    assert asked_decimals(0.05, 0.01) is None  # a relative tolerance implies none


@pytest.mark.parametrize(
    ("question", "fields"),
    [
        ("How many products are in the Tents category?", {"count": True}),
        ("What is the median resolution time, in hours, of closed tickets?", {"unit": "hour"}),
        ("What percentage of revenue came from the West? Give a percentage.", {"percent": True}),
        ("Answer with the month number (1-12).", {"month": True}),
        ("During which hour of the day (0-23) were most events recorded?", {"hour": True}),
        ("By what percentage did revenue change from 2024 to 2025?", {"signed": True}),
        ("By how many percent did revenue drop in March?", {"signed": False}),
        ("What was revenue in March 2025, in US dollars?", {"money": True}),
        ("What is the 90th percentile of resolution time in hours?", {"percent": False}),
    ],
)
def test_asked_form(question: str, fields: dict[str, object]) -> None:
    form = asked_form(question)
    assert {key: getattr(form, key) for key in fields} == fields


@pytest.mark.parametrize(
    ("sentence", "read"),
    [
        ("Twelve key accounts.", "12 key accounts."),
        ("Only one ticket is still open.", "Only 1 ticket is still open."),
        ("1 (one of the tables holds it)", "1 (one of the tables holds it)"),
        ("4 stores, one in each state", "4 stores, one in each state"),
        ("no one else, two of them", "no one else, two of them"),
        ("one point two three million", "one point two three million"),
    ],
)
def test_words_read(sentence: str, read: str) -> None:
    assert words_read(sentence) == read


@pytest.mark.parametrize(
    ("question", "text", "expected"),
    [
        ("How did revenue change, in percent?", "fell by 43.89%", "fell by −43.89%"),
        ("How did revenue change, in percent?", "minus 43.89%", "minus −43.89%"),
        ("What is the median time in hours?", "49.9 minutes", "0.831667 hours"),
        ("As a percentage?", "405 basis points", "4.05%"),
        ("Answer with the month number (1-12).", "July", "7"),
        ("Which hour of the day (0-23)?", "8 PM local time", "20 local time"),
        ("What was revenue?", "\\$37{,}430.20", "$37,430.20"),
    ],
)
def test_normalised(question: str, text: str, expected: str) -> None:
    assert normalised(text, asked_form(question)) == expected


@pytest.mark.parametrize(
    ("answer", "passed"),
    [
        ("FINAL ANSWER: 12\n\nWait, I double-counted. The correct count is 10.", False),
        ("FINAL ANSWER: 12\n\nI checked again; the correct count is 12.", True),
        ("FINAL ANSWER: at least 12", False),
        ("FINAL ANSWER: 12 (± 2)", False),
        ("FINAL ANSWER: If I had to guess, 12.", False),
        ("FINAL ANSWER: 12 is incorrect; the real count is unknown.", False),
        ("FINAL ANSWER: 12%", False),
        ("FINAL ANSWER: Twelve products.", True),
    ],
)
def test_round3_count_rules(answer: str, passed: bool) -> None:
    check = check_numeric(
        answer, 12, tolerance_rel=0, question="How many products are in the Tents category?"
    )
    assert check.passed is passed and not check.uncertain, check.reason


_CHANGE_Q = "By what percentage did revenue change? Give the percentage (negative for a decrease)."


@pytest.mark.parametrize(
    ("answer", "truth", "passed"),
    [
        ("FINAL ANSWER: 43.9% lower than in 2024", -43.89, True),
        ("FINAL ANSWER: a 43.9% decline", -43.89, True),
        ("FINAL ANSWER: ↓ 43.9%", -43.89, True),
        ("FINAL ANSWER: (43.9%)", -43.89, True),
        ("FINAL ANSWER: –43.9%", -43.89, True),
        ("FINAL ANSWER: 24.0% fewer morning events", 23.97, False),
        ("FINAL ANSWER: 24.0% higher", 23.97, True),
        ("FINAL ANSWER: -43.9% (a decline)", -43.89, True),
    ],
)
def test_direction_words_round_four(answer: str, truth: float, passed: bool) -> None:
    check = check_numeric(answer, truth, tolerance_abs=0.05, question=_CHANGE_Q)
    assert check.passed is passed and not check.uncertain, check.reason


def test_both_directions_are_uncertain() -> None:
    check = check_numeric("FINAL ANSWER: 24.0% lower, i.e. up", 23.97, question=_CHANGE_Q)
    assert check.uncertain


@pytest.mark.parametrize(
    ("answer", "passed", "uncertain"),
    [
        (
            "164 tickets were opened in 2025.\n\nShould I also pull the 2024 figure (133)?",
            True,
            False,
        ),
        ("**164 tickets were opened in 2025.**", True, False),
        ("FINAL ANSWER: 164\n\nOn reflection, 171 is right.", False, False),
        ("FINAL ANSWER: 164 — make that 171.", False, False),
        ("FINAL ANSWER: 164\n\nThe 2024 count was 171.", False, True),
        ("FINAL ANSWER: 164\n\nThat is about 0.45 tickets per day.", True, False),
    ],
)
def test_later_values_round_four(answer: str, passed: bool, uncertain: bool) -> None:
    check = check_numeric(answer, 164, question="How many support tickets were opened in 2025?")
    assert (check.passed, check.uncertain) == (passed, uncertain), check.reason


def test_number_words_and_scales_round_four() -> None:
    assert check_numeric("Six.", 6, question="How many agents?").passed
    assert check_numeric("FINAL ANSWER: 4.1/5", 4.1, question="Average score (1 to 5)?").passed
