"""The entity grader: does the answer name a correct catalog id (or an alias) and no
known-wrong one?

Matching is case-insensitive and bounded: a name matches only where it is not part of a
longer identifier, so ``sales.orders`` does not match inside ``sales.orders_archive``,
``sales.orders-2023``, ``xsales.orders`` or ``sales.orders.amount`` (a column id is a
different entity). Markdown ``*`` emphasis is ignored. Whitespace
inside a multi-word alias matches any run of whitespace.

Precedence: a known-wrong alias named in the graded text fails the grade even when a correct
entity is named too, unless it is only a caveat after the correct entity, recommended for
another purpose (``analytics.daily_sales; use sales.orders for exact figures``:
:func:`caveat_only`). Naming a correct entity and other catalog ids of the same shape fails
as a hedge when there are two or more others, or one with a hedge word (``either``,
``probably``, ``could also``...) or joined by ``or`` (:func:`other_candidates`).
The graded text is the final-answer section when the answer has one
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


_REJECTING = (
    r"(?:\bnot|n't|\bnever)(?:[ \t]+(?:use|using|query|querying|scan|scanning|rely[ \t]+on"
    r"|trust|pick|choose|touch|join|read|select[ \t]+from))?"
    r"|\bavoid(?:ing)?|\binstead[ \t]+of|\brather[ \t]+than|\bnor|\bdeprecated|\bexcept"
)
_LISTED = (
    r"[ \t`'\"(]*[\w.]+[`'\")]?(?:,[ \t]*(?:(?:or|and|nor)[ \t]+)?|[ \t]+(?:or|and|nor)[ \t]+)"
)
NEGATION_BEFORE = re.compile(
    rf"(?:{_REJECTING})(?:{_LISTED})*[ \t`'\"(]*(?:the[ \t]+)?[`'\"]?$", re.IGNORECASE
)
"""A name right after one of these words (``not sales.orders``, ``do not use``, ``never``,
``avoid legacy.orders``, ``instead of legacy.orders``), or later in a list they head (``do
not use staging.orders_raw or core.orders``), is rejected, not named."""

_IDENTIFIER_RE = re.compile(r"(?<![\w.-])[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+(?![\w])(?![.-]\w)")
_ENTITY_HEDGE_RE = re.compile(
    r"\b(?:either|alternatively|probably|perhaps|maybe|possibly|likely|any of"
    r"|(?:could|might|would|can) also|also (?:works?|serves?|fine))\b",
    re.IGNORECASE,
)


_PURPOSE_RE = re.compile(
    r"\bfor[ \t]+(?:the[ \t]+|an?[ \t]+)?(?:exact|precise|accurate|complete|audited|reconciled"
    r"|final|row-level|order-level|per-order|to-the-cent)\b",
    re.IGNORECASE,
)
"""A purpose other than the question's (``for exact figures``, ``for complete revenue``): a
known-wrong table recommended for it is a caveat, not a second answer."""
_CLAUSE_BREAK_RE = re.compile(r"[.;:!?\n]|\b(?:but|while|whereas)\b", re.IGNORECASE)
_OR_RE = re.compile(r"\bor\b|/", re.IGNORECASE)
_SENTENCE_END_RE = re.compile(r"[.;!?\n]")


def _clause(text: str, start: int, end: int) -> str:
    """The clause around ``text[start:end]``: from the last sentence break (or ``but``,
    ``while``, ``whereas``) before it to the next sentence end after it, so both "for exact
    figures, compute from sales.orders" and "use sales.orders for exact revenue" keep their
    purpose."""
    before = [m.end() for m in _CLAUSE_BREAK_RE.finditer(text, 0, start)]
    lo = before[-1] if before else 0
    after = _SENTENCE_END_RE.search(text, end)
    hi = after.start() if after else len(text)
    return text[lo:hi]


def caveat_only(text: str, wrong: str, right: Sequence[str]) -> bool:
    """True when every mention of the known-wrong ``wrong`` in ``text`` is a caveat: a right
    entity is named before it, and each mention sits in a clause that gives it another purpose
    (:data:`_PURPOSE_RE`: "use it for trends only and use sales.orders for exact revenue")
    with no ``or``, ``/`` or hedge word in that clause, and no hedge word in the text."""
    text = text.replace("*", "")
    firsts = [
        m.start()
        for name in right
        for m in mention_pattern(name).finditer(text)
        if not rejected(text, m.start())
    ]
    if not firsts or _ENTITY_HEDGE_RE.search(text):
        return False
    first_right = min(firsts)
    seen = False
    for m in mention_pattern(wrong).finditer(text):
        if rejected(text, m.start()):
            continue
        seen = True
        clause = _clause(text, m.start(), m.end())
        if m.start() < first_right or not _PURPOSE_RE.search(clause) or _OR_RE.search(clause):
            return False
    return seen


def rejected(text: str, start: int) -> bool:
    """True when the name at ``start`` follows a rejecting word (:data:`NEGATION_BEFORE`)."""
    return bool(NEGATION_BEFORE.search(text[max(0, start - 80) : start]))


def other_candidates(text: str, known: Sequence[str], shape: Sequence[str]) -> list[str]:
    """Catalog-like ids in ``text`` (``schema.table``; ``schema.table.column`` when the
    correct entities are columns) that are not in ``known`` and not rejected: the other
    candidates an answer offers."""
    text = text.replace("*", "")
    parts = {name.count(".") for name in shape}
    lowered = {name.lower() for name in known}
    seen: list[str] = []
    for match in _IDENTIFIER_RE.finditer(text):
        name = match.group(0)
        if name.count(".") not in parts or name.lower() in lowered or name in seen:
            continue
        if not rejected(text, match.start()):
            seen.append(name)
    return seen


def mentioned(text: str, names: Sequence[str]) -> list[str]:
    """The names of ``names`` that ``text`` names (not rejected: see :data:`NEGATION_BEFORE`),
    in the given order, without repeats."""
    text = text.replace("*", "")
    seen: list[str] = []
    for name in names:
        if not name.strip() or name in seen:
            continue
        for match in mention_pattern(name).finditer(text):
            if not rejected(text, match.start()):
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
    wrong = [w for w in mentioned(text, wrong_aliases) if not caveat_only(text, w, right)]
    expected = {"any_of": [*entities, *aliases], "none_of": list(wrong_aliases)}
    if wrong:
        also = f" (it also names {', '.join(right)})" if right else ""
        reason = (
            f"{where.where} names the known-wrong {', '.join(wrong)}{also}; "
            "a known-wrong name fails even next to a right one"
        )
        return GradeCheck(name=name, passed=False, reason=reason, expected=expected, found=wrong)
    others = (
        other_candidates(text, [*entities, *aliases, *wrong_aliases], entities) if right else []
    )
    hedge = _ENTITY_HEDGE_RE.search(text) or re.search(
        r"\b(?:or|/)[ \t`*]*$", text[: text.lower().find(others[0].lower())] if others else ""
    )
    if others and (len(others) >= 2 or hedge):
        how = f"with {hedge.group(0).strip()!r}" if hedge else "as a list"
        reason = (
            f"{where.where} names {', '.join(right)} and also {', '.join(others)} {how}: "
            "more than one candidate for a one-entity question is a hedge"
        )
        return GradeCheck(
            name=name, passed=False, reason=reason, expected=expected, found=[*right, *others]
        )
    if right:
        reason = f"{where.where} names {', '.join(right)}, a correct entity"
        return GradeCheck(name=name, passed=True, reason=reason, expected=expected, found=right)
    reason = f"{where.where} names none of {', '.join([*entities, *aliases])}"
    return GradeCheck(name=name, passed=False, reason=reason, expected=expected, found=None)
