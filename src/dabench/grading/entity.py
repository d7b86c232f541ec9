"""The entity grader: does the answer name a correct catalog id (or an alias) and no
known-wrong one?

Matching is case-insensitive and bounded: a name matches only where it is not part of a
longer identifier, so ``sales.orders`` does not match inside ``sales.orders_archive``,
``sales.orders-2023``, ``xsales.orders`` or ``sales.orders.amount`` (a column id is a
different entity). Markdown ``*`` emphasis is ignored. Whitespace
inside a multi-word alias matches any run of whitespace.

Precedence: a known-wrong alias named in the graded text fails the grade even when a correct
entity is named too. The graded text is the final-answer section when the answer has one
(so an agent may warn about the deprecated table earlier), else the whole answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from dabench.grading.answer import focus
from dabench.journal.records import GradeCheck


@lru_cache(maxsize=1024)
def mention_pattern(name: str) -> re.Pattern[str]:
    """The bounded, case-insensitive pattern that finds ``name`` in a text."""
    parts = [re.escape(p) for p in name.strip().split()]
    body = r"\s+".join(parts)
    return re.compile(rf"(?<![\w.-]){body}(?![\w])(?![.-]\w)", re.IGNORECASE)


NEGATION_BEFORE = re.compile(
    r"(?:\bnot|n't(?: use)?|\bnever|\bavoid(?:ing)?|\binstead of|\brather than|\bnor"
    r"|\bdeprecated|\bexcept)[ \t`'\"(]*(?:the[ \t]+)?[`'\"]?$",
    re.IGNORECASE,
)
"""A name right after one of these words (``not sales.orders``, ``avoid legacy.orders``,
``instead of legacy.orders``) is rejected, not named."""


def mentioned(text: str, names: Sequence[str]) -> list[str]:
    """The names of ``names`` that ``text`` names (not rejected: see :data:`NEGATION_BEFORE`),
    in the given order, without repeats."""
    text = text.replace("*", "")
    seen: list[str] = []
    for name in names:
        if not name.strip() or name in seen:
            continue
        for match in mention_pattern(name).finditer(text):
            if not NEGATION_BEFORE.search(text[max(0, match.start() - 30) : match.start()]):
                seen.append(name)
                break
    return seen


def check_entity(
    answer: str,
    entities: Sequence[str],
    *,
    aliases: Sequence[str] = (),
    wrong_aliases: Sequence[str] = (),
    name: str = "entity",
) -> GradeCheck:
    """Grade the entities named in ``answer``."""
    where = focus(answer)
    text = where.section
    right = mentioned(text, [*entities, *aliases])
    wrong = mentioned(text, wrong_aliases)
    expected = {"any_of": [*entities, *aliases], "none_of": list(wrong_aliases)}
    if wrong:
        also = f" (it also names {', '.join(right)})" if right else ""
        reason = (
            f"{where.where} names the known-wrong {', '.join(wrong)}{also}; "
            "a known-wrong name fails even next to a right one"
        )
        return GradeCheck(name=name, passed=False, reason=reason, expected=expected, found=wrong)
    if right:
        reason = f"{where.where} names {', '.join(right)}, a correct entity"
        return GradeCheck(name=name, passed=True, reason=reason, expected=expected, found=right)
    reason = f"{where.where} names none of {', '.join([*entities, *aliases])}"
    return GradeCheck(name=name, passed=False, reason=reason, expected=expected, found=None)
