"""The numeric grader: the answer's committed number against the truth, with absolute and
relative tolerance.

Rule (docs/grading.md, "Numeric"):

1. **Committed statement** (:func:`dabench.grading.answer.commitment`): the final-answer
   line; without a marker, the concluding sentence. Numbers elsewhere (reasoning,
   intermediate figures, SQL) are never graded.
2. The committed statement must state a number within tolerance of the truth.
3. **Known-wrong value**: a number within tolerance of the trap's naive answer (itself
   outside the truth's tolerance) in the committed statement or the sentences after it fails.
4. **Hedge**: another candidate value for the asked quantity fails. A candidate is a number
   of the same kind as the matching one (both or neither a percentage, both or neither with
   a currency sign), not within tolerance of the truth, and not a year-like context number
   (a plain integer 1900..2100 when the truth is not one). It is a hedge when the candidate
   is joined to the truth by a range (``1,200-1,300``), or its sentence has a hedge word
   (:data:`HEDGE_WORDS`; in the committed sentence the conditional words ``if``,
   ``unless``, ``depending`` count only after its first number).
"""

from __future__ import annotations

import math
import re

from dabench.grading.answer import Commitment, commitment
from dabench.grading.numbers import NumberMention, find_all_numbers, format_number
from dabench.journal.records import GradeCheck

HEDGE_WORDS: tuple[str, ...] = (
    "or",
    "either",
    "between",
    "alternatively",
    "alternative",
    "possibly",
    "perhaps",
    "maybe",
    "might",
    "could",
    "would",
    "otherwise",
    "somewhere",
    "ranging",
    "range",
    "if",
    "unless",
    "depending",
)
"""Words that make a second candidate value a hedge."""
_CONDITIONAL = {"if", "unless", "depending"}
_WORD_RE = re.compile(r"[A-Za-z]+")
_RANGE_RE = re.compile(r"[ \t]?[-–][ \t]?")


def tolerance(expected: float, tolerance_abs: float, tolerance_rel: float) -> float:
    """The allowed absolute difference: ``max(tolerance_abs, tolerance_rel * |expected|)``."""
    return max(tolerance_abs, tolerance_rel * abs(expected))


def within(found: float, expected: float, tolerance_abs: float, tolerance_rel: float) -> bool:
    """True when ``found`` is within tolerance of ``expected`` (see :func:`tolerance`)."""
    return abs(found - expected) <= tolerance(expected, tolerance_abs, tolerance_rel) + 1e-12


def _hits(mention: NumberMention, target: float, tol_abs: float, tol_rel: float) -> bool:
    return any(within(v, target, tol_abs, tol_rel) for v in mention.readings())


def _year_like(mention: NumberMention) -> bool:
    return (
        not mention.percent
        and not mention.currency
        and mention.text.isdigit()
        and 1900 <= mention.value <= 2100
    )


def _hedge_words(sentence: str, after: int | None) -> list[str]:
    """Hedge words in ``sentence``; conditional ones only from offset ``after`` on."""
    words: list[str] = []
    for match in _WORD_RE.finditer(sentence):
        word = match.group(0).lower()
        if word not in HEDGE_WORDS:
            continue
        if word in _CONDITIONAL and after is not None and match.start() < after:
            continue
        words.append(word)
    return words


def find_hedge(
    statement: Commitment, hit: NumberMention, expected: float, tol_abs: float, tol_rel: float
) -> str | None:
    """Why ``statement`` hedges between ``hit`` (the truth) and another value, or ``None``."""
    truth_is_year = 1900 <= expected <= 2100 and expected == int(expected)

    def competitors(text: str) -> list[NumberMention]:
        return [
            m
            for m in find_all_numbers(text)
            if not m.ambiguous
            and m.percent == hit.percent
            and m.currency == hit.currency
            and not _hits(m, expected, tol_abs, tol_rel)
            and (truth_is_year or not _year_like(m))
        ]

    sentences = [(statement.sentence, True), *((s, False) for s in statement.following)]
    for text, committed in sentences:
        others = competitors(text)
        if not others:
            continue
        if committed:
            first = min([hit.start, *(m.start for m in others)])
            for other in others:
                lo, hi = sorted((hit, other), key=lambda m: m.start)
                if _RANGE_RE.fullmatch(text[lo.end : hi.start]):
                    return f"a range {lo.text}-{hi.text}"
            words = _hedge_words(text, first)
        else:
            words = _hedge_words(text, None)
        if words:
            values = ", ".join(m.text for m in others)
            return f"another candidate value {values} with {words[0]!r}"
    return None


def check_numeric(
    answer: str,
    expected: float,
    *,
    tolerance_abs: float = 0.0,
    tolerance_rel: float = 0.005,
    naive: float | None = None,
    name: str = "numeric",
) -> GradeCheck:
    """Grade the committed number in ``answer`` against ``expected``; ``naive`` is a
    known-wrong value."""
    statement = commitment(answer)
    where = statement.where
    mentions = find_all_numbers(statement.sentence)
    parsed = [m for m in mentions if not m.ambiguous]
    ambiguous = [m.text for m in mentions if m.ambiguous]
    tol = tolerance(expected, tolerance_abs, tolerance_rel)
    bound = (
        f"{format_number(expected)} ± {format_number(tol)} "
        f"(max of abs {format_number(tolerance_abs)}, rel {tolerance_rel:g})"
    )
    found = [m.text for m in mentions]
    unparsed = f" ({', '.join(ambiguous)}: ambiguous grouping, not read)" if ambiguous else ""

    def fail(reason: str) -> GradeCheck:
        return GradeCheck(
            name=name, passed=False, reason=reason, expected=expected, found=found or None
        )

    tols = (tolerance_abs, tolerance_rel)
    hit = next((m for m in parsed if _hits(m, expected, *tols)), None)
    naive_differs = (
        naive is not None
        and not math.isnan(naive)
        and not within(naive, expected, tolerance_abs, tolerance_rel)
    )
    if naive is not None and naive_differs:
        span = [statement.sentence, *statement.following]
        for text in span:
            wrong = next((m for m in find_all_numbers(text) if _hits(m, naive, *tols)), None)
            if wrong is None:
                continue
            said = f"{where} ({statement.sentence[:100]!r}) or what follows it"
            if hit is not None:
                return fail(
                    f"{said} states both the truth ({hit.text}) and the known-wrong value "
                    f"{wrong.text} (naive answer {format_number(naive)}): a hedge fails"
                )
            return fail(
                f"{said} states {wrong.text}, the known-wrong (naive) answer "
                f"{format_number(naive)}; expected {bound}"
            )
    if not parsed:
        return fail(f"no number in {where}{unparsed}; expected {bound}")
    if hit is None:
        return fail(
            f"{where} ({statement.sentence[:100]!r}) states {', '.join(found)}; "
            f"none is within {bound}{unparsed}"
        )
    hedge = find_hedge(statement, hit, expected, tolerance_abs, tolerance_rel)
    if hedge is not None:
        return fail(f"{where} states {hit.text} but hedges: {hedge}; a hedge fails")
    reason = f"{where} states {hit.text}, within {bound}"
    return GradeCheck(name=name, passed=True, reason=reason, expected=expected, found=hit.text)
