"""The numeric grader: the answer's number against the truth, with absolute and relative
tolerance.

Rule (documented in docs/grading.md): the candidates are the numbers on the final-answer line
when there is one, else every number in the answer. The grade passes when some candidate is
within tolerance of the truth **and** no candidate is within tolerance of a known-wrong value
(the trap's naive answer) that is itself outside the truth's tolerance: hedging between the
right and the naive number fails.
"""

from __future__ import annotations

from dabench.grading.answer import focus
from dabench.grading.numbers import NumberMention, find_numbers, format_number
from dabench.journal.records import GradeCheck


def tolerance(expected: float, tolerance_abs: float, tolerance_rel: float) -> float:
    """The allowed absolute difference: ``max(tolerance_abs, tolerance_rel * |expected|)``."""
    return max(tolerance_abs, tolerance_rel * abs(expected))


def within(found: float, expected: float, tolerance_abs: float, tolerance_rel: float) -> bool:
    """True when ``found`` is within tolerance of ``expected`` (see :func:`tolerance`)."""
    return abs(found - expected) <= tolerance(expected, tolerance_abs, tolerance_rel) + 1e-12


def _matching(
    mentions: list[NumberMention], target: float, tolerance_abs: float, tolerance_rel: float
) -> NumberMention | None:
    for mention in mentions:
        if any(within(v, target, tolerance_abs, tolerance_rel) for v in mention.readings()):
            return mention
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
    """Grade the number in ``answer`` against ``expected``; ``naive`` is a known-wrong value."""
    where = focus(answer)
    mentions = find_numbers(where.line if where.marked else where.section)
    tol = tolerance(expected, tolerance_abs, tolerance_rel)
    bound = (
        f"{format_number(expected)} ± {format_number(tol)} "
        f"(max of abs {format_number(tolerance_abs)}, rel {tolerance_rel:g})"
    )
    found = [m.text for m in mentions]
    if not mentions:
        return GradeCheck(
            name=name,
            passed=False,
            reason=f"no number in {where.where}; expected {bound}",
            expected=expected,
            found=None,
        )
    hit = _matching(mentions, expected, tolerance_abs, tolerance_rel)
    wrong = None
    if naive is not None and not within(naive, expected, tolerance_abs, tolerance_rel):
        wrong = _matching(mentions, naive, tolerance_abs, tolerance_rel)
    if hit is not None and wrong is None:
        reason = f"{where.where} states {hit.text}, within {bound}"
        return GradeCheck(name=name, passed=True, reason=reason, expected=expected, found=hit.text)
    if hit is not None and wrong is not None:
        reason = (
            f"{where.where} states both the truth ({hit.text}) and the known-wrong value "
            f"{wrong.text} (naive answer {format_number(naive or 0.0)}): a hedge fails"
        )
        return GradeCheck(name=name, passed=False, reason=reason, expected=expected, found=found)
    if wrong is not None:
        reason = (
            f"{where.where} states {wrong.text}, the known-wrong (naive) answer "
            f"{format_number(naive or 0.0)}; expected {bound}"
        )
        return GradeCheck(name=name, passed=False, reason=reason, expected=expected, found=found)
    reason = f"{where.where} states {', '.join(found)}; none is within {bound}"
    return GradeCheck(name=name, passed=False, reason=reason, expected=expected, found=found)
