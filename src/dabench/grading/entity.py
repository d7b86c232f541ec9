"""The entity grader: does the answer name a correct catalog id (or an alias) and no
known-wrong one?

Matching is case-insensitive and bounded: a name matches only where it is not part of a
longer identifier, so ``sales.orders`` does not match inside ``sales.orders_archive``,
``sales.orders-2023``, ``xsales.orders`` or ``sales.orders.amount`` (a column id is a
different entity). Markdown ``*`` emphasis is ignored. Whitespace
inside a multi-word alias matches any run of whitespace.

Quoted and ``warehouse.``-qualified ids read as the catalog id, and a name is not named when
rejected before it (``not``, ``avoid``...), followed by a verdict against it (``is not the
source of truth``, ``is deprecated``) or inside a statement that it does not exist
(:func:`rejected`; the forms are in :mod:`dabench.grading.entity_forms`).

Precedence: a known-wrong alias named in the graded text fails the grade even when a correct
entity is named too, unless it is only a caveat after the correct entity: recommended for
another purpose (``analytics.daily_sales; use sales.orders for exact figures``) or its join
partner (``join it to sales.orders on order_id``); next to a difference marker the grade is
uncertain (:func:`wrong_use`). Naming a correct entity and other candidates (catalog ids of
the same shape, other hyphenated ids, tables or columns in words) fails as a hedge when there
are two or more spelled others, or one with a hedge word (``either``, ``probably``, ``could
also``, ``equally valid``...) or joined by ``or`` (:func:`other_candidates`).
The graded text is the final-answer section when the answer has one
(so an agent may warn about the deprecated table earlier), else the whole answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from dabench.grading.answer import focus
from dabench.grading.entity_disowned import CLEAN, DISOWNED, disowned
from dabench.grading.entity_forms import (
    CROSS,
    denied_before,
    plain_identifiers,
    prose_candidates,
    rejected_after,
    slug_candidates,
    under_rejecting_heading,
    without_offers,
)
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
    r"|\bskip(?:ping)?|\bignore|"
    + CROSS
    + r"|\bnicht|\bnon|\bpas|\bno[ \t]+(?:uses?|usar|utilices)|\b(?:an)?statt"
    r"|\bau[ \t]+lieu[ \t]+de|\ben[ \t]+(?:lugar|vez)[ \t]+de"
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
    r"|(?:could|might|would|can) also|also (?:works?|serves?|fine)"
    r"|equally[ \t]+(?:valid|good|fine|correct|usable|acceptable|reliable|authoritative|right)"
    r"|also[ \t]+(?:valid|correct|acceptable|right|an?[ \t]+(?:valid[ \t]+|good[ \t]+)?"
    r"(?:option|choice|candidate|alternative|answer|source))"
    r"|just[ \t]+as[ \t]+(?:good|valid|reliable|correct)|interchangeabl[ey]"
    r"|both[ \t]+(?:the[ \t]+)?[`'\"]*\w+[.:_-][\w.:-]*[`'\"]*[ \t]+and)\b",
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


_JOIN_BEFORE_RE = re.compile(
    r"\bjoin(?:s|ed|ing)?(?:[ \t]+(?:it|this|them|that|back))?"
    r"(?:[ \t]+(?:to|with|on|onto|against))?[ \t]+(?:the[ \t]+)?[`'\"]?$",
    re.IGNORECASE,
)
_JOIN_AFTER_RE = re.compile(
    r"^[`'\"]?(?:[ \t]+table)?[ \t]+(?:on|using|for|to[ \t]+(?:get|add|bring|pull|look))\b",
    re.IGNORECASE,
)
_REFERENCE_BEFORE_RE = re.compile(
    r"\b(?:references|refers[ \t]+to|(?:points|links)[ \t]+(?:back[ \t]+)?to"
    r"|foreign[ \t]+key[ \t]+(?:to|into|on))[ \t]+(?:the[ \t]+)?[`'\"]?$",
    re.IGNORECASE,
)
"""A known-wrong name is the right one's join partner, not a second answer, right after
``join``/``join it to``/``join with`` and followed by a join key or a purpose (``on``,
``using``, ``for``, ``to get``: "finance.payments; join it to sales.orders on order_id",
"join to customers.customers for names"), or right after a reference verb
("sales.refunds.order_id - it references sales.orders.order_id", "a foreign key to ...")."""


def _join_partner(text: str, match: re.Match[str]) -> bool:
    """True when the mention ``match`` is named as a join partner (:data:`_JOIN_BEFORE_RE`)."""
    before = text[max(0, match.start() - 60) : match.start()]
    if _REFERENCE_BEFORE_RE.search(before):
        return True
    return bool(_JOIN_BEFORE_RE.search(before) and _JOIN_AFTER_RE.search(text[match.end() :]))


_CONTRAST_RE = re.compile(
    r"(?<!\bno )(?<!\bnot )(?<!n't )(?<!never )"
    r"\b(?:differ(?:s|ent|ence)?|distinct|unlike|in[ \t]+contrast|by[ \t]+contrast)\b",
    re.IGNORECASE,
)
"""A difference marker ("which can differ", "unlike the list price"; not "is no different"):
a known-wrong name in such a clause may be a contrast or a second answer (uncertain)."""

_NAMED, _CAVEAT, _CONTRAST = "named", "caveat", "contrast"


def _mentions(text: str, name: str) -> list[re.Match[str]]:
    """The mentions of ``name`` in ``text`` that are not rejected (:func:`rejected`)."""
    found = mention_pattern(name).finditer(text)
    return [m for m in found if not rejected(text, m.start(), m.end())]


def _mention_use(text: str, match: re.Match[str], first_right: int) -> str:
    """How one mention of a known-wrong name is used: a caveat (after the right entity, for
    another purpose or as its join partner), a contrast, or named as an answer."""
    clause = _clause(text, match.start(), match.end())
    if match.start() < first_right or _OR_RE.search(clause):
        return _NAMED
    if _join_partner(text, match) or _PURPOSE_RE.search(clause):
        return _CAVEAT
    return _CONTRAST if _CONTRAST_RE.search(clause) else _NAMED


def wrong_use(text: str, wrong: str, right: Sequence[str]) -> str:
    """``"caveat"`` when every mention of the known-wrong ``wrong`` is a caveat: a right
    entity is named before it and each mention sits in a clause with no ``or``/``/`` that
    gives it another purpose (:data:`_PURPOSE_RE`: "use it for trends only and use
    sales.orders for exact revenue") or names it as a join partner (:func:`_join_partner`),
    with no hedge word in the text; ``"contrast"`` when some mention is instead in a clause
    with a difference marker (:data:`_CONTRAST_RE`); else ``"named"``."""
    text = text.replace("*", "")
    firsts = [m.start() for name in right for m in _mentions(text, name)]
    if not firsts or _ENTITY_HEDGE_RE.search(text):
        return _NAMED
    uses = {_mention_use(text, m, min(firsts)) for m in _mentions(text, wrong)}
    for use in (_NAMED, _CONTRAST, _CAVEAT):
        if use in uses:
            return use
    return _NAMED


def caveat_only(text: str, wrong: str, right: Sequence[str]) -> bool:
    """True when every mention of ``wrong`` is a caveat (:func:`wrong_use`)."""
    return wrong_use(text, wrong, right) == _CAVEAT


def rejected(text: str, start: int, end: int) -> bool:
    """True when the name at ``text[start:end]`` is rejected: it follows a rejecting word
    (:data:`NEGATION_BEFORE`), sits in a statement that it does not exist
    (:func:`~dabench.grading.entity_forms.denied_before`) or is followed by a verdict against
    it (:func:`~dabench.grading.entity_forms.rejected_after`)."""
    before = text[max(0, start - 80) : start]
    return (
        bool(NEGATION_BEFORE.search(before))
        or denied_before(text, start)
        or rejected_after(text, end)
        or under_rejecting_heading(text, start)
    )


class Candidate(NamedTuple):
    """Another entity an answer offers besides the right one."""

    name: str
    start: int
    prose: bool = False
    """Named in words ("the orders_raw table in staging"): counts only as an alternative."""


def _spelled_ids(text: str, lowered: set[str], parts: set[int]) -> list[tuple[str, int, int]]:
    found = [(m.group(0), m.start(), m.end()) for m in _IDENTIFIER_RE.finditer(text)]
    return [c for c in found if c[0].count(".") in parts and c[0].lower() not in lowered]


def other_candidates(
    text: str, known: Sequence[str], shape: Sequence[str], right_spans: Sequence[tuple[int, int]]
) -> list[Candidate]:
    """Other candidates ``text`` offers, not in ``known`` and not rejected: catalog ids of
    the shape of the correct entities ``shape`` (``schema.table``; ``schema.table.column``;
    hyphenated ids such as knowledge pages, :func:`slug_candidates`), and tables or columns
    named in words (:func:`prose_candidates`)."""
    parts = {name.count(".") for name in shape}
    lowered = {name.lower() for name in known}
    spelled = _spelled_ids(text, lowered, parts)
    if 0 in parts:
        spelled += slug_candidates(text, known, right_spans)
    prose = [c for dots in sorted(parts) for c in prose_candidates(text, shape, dots)]
    seen: dict[str, Candidate] = {}
    for group, is_prose in ((spelled, False), (prose, True)):
        for name, start, end in sorted(group, key=lambda c: c[1]):
            if name.lower() not in seen and not rejected(text, start, end):
                seen[name.lower()] = Candidate(name, start, is_prose)
    return list(seen.values())


def mentioned(text: str, names: Sequence[str]) -> list[str]:
    """The names of ``names`` that ``text`` names (not rejected: see :data:`NEGATION_BEFORE`),
    in the given order, without repeats."""
    text = text.replace("*", "")
    seen: list[str] = []
    for name in names:
        if not name.strip() or name in seen:
            continue
        for match in mention_pattern(name).finditer(text):
            if not rejected(text, match.start(), match.end()):
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
    where = focus(plain_identifiers(answer))
    text = without_offers(plain_identifiers(where.section).replace("*", ""))
    right = mentioned(text, [*entities, *aliases])
    uses = {w: wrong_use(text, w, right) for w in mentioned(text, wrong_aliases)}
    wrong = [w for w, use in uses.items() if use == _NAMED]
    expected = {"any_of": [*entities, *aliases], "none_of": list(wrong_aliases)}
    if wrong:
        also = f" (it also names {', '.join(right)})" if right else ""
        reason = (
            f"{where.where} names the known-wrong {', '.join(wrong)}{also}; "
            "a known-wrong name fails even next to a right one"
        )
        return GradeCheck(name=name, passed=False, reason=reason, expected=expected, found=wrong)
    hedged = _hedged(text, right, [*entities, *aliases, *wrong_aliases], entities)
    if hedged:
        others, how = hedged
        reason = (
            f"{where.where} names {', '.join(right)} and also {', '.join(others)} {how}: "
            "more than one candidate for a one-entity question is a hedge"
        )
        return GradeCheck(
            name=name, passed=False, reason=reason, expected=expected, found=[*right, *others]
        )
    stance = _stance(text, right, [*entities, *aliases, *wrong_aliases])
    if stance != CLEAN:
        how = "disowns" if stance == DISOWNED else "may disown"
        reason = (
            f"{'' if stance == DISOWNED else 'uncertain: '}{where.where} names "
            f"{', '.join(right)} but {how} it (a negative or contrast marker in its clause) "
            "and offers another id"
        )
        return GradeCheck(
            name=name,
            passed=False,
            uncertain=stance != DISOWNED,
            reason=reason,
            expected=expected,
            found=right,
        )
    contrast = [w for w, use in uses.items() if use == _CONTRAST]
    if right and contrast:
        reason = (
            f"uncertain: {where.where} names {', '.join(right)} and then the known-wrong "
            f"{', '.join(contrast)} next to a difference marker; the rules cannot tell a "
            "contrast from a second answer"
        )
        return GradeCheck(
            name=name,
            passed=False,
            uncertain=True,
            reason=reason,
            expected=expected,
            found=[*right, *contrast],
        )
    if right:
        reason = f"{where.where} names {', '.join(right)}, a correct entity"
        return GradeCheck(name=name, passed=True, reason=reason, expected=expected, found=right)
    reason = f"{where.where} names none of {', '.join([*entities, *aliases])}"
    return GradeCheck(name=name, passed=False, reason=reason, expected=expected, found=None)


_OR_BEFORE_RE = re.compile(r"(?:\bor|/)[ \t`'\"*]*(?:the[ \t]+)?[`'\"]*$", re.IGNORECASE)


def _hedged(
    text: str, right: Sequence[str], known: Sequence[str], shape: Sequence[str]
) -> tuple[list[str], str] | None:
    """The other candidates and how they are offered, when ``text`` offers more than one
    candidate: two or more spelled ids (a list), or any other candidate with a hedge word in
    the text or right after ``or``/``/``; else None."""
    if not right:
        return None
    spans = [m.span() for name in right for m in _mentions(text, name)]
    others = other_candidates(text, known, shape, spans)
    hedge = _ENTITY_HEDGE_RE.search(text)
    offered = [c for c in others if hedge or _OR_BEFORE_RE.search(text[: c.start])]
    if offered:
        how = f"with {hedge.group(0).strip()!r}" if hedge else "joined by 'or'"
        return [c.name for c in offered], how
    listed = [c.name for c in others if not c.prose]
    return (listed, "as a list") if len(listed) >= 2 else None


def _stance(text: str, right: Sequence[str], known: Sequence[str]) -> str:
    """Whether ``text`` disowns the right entities it names while offering another catalog
    id (:func:`~dabench.grading.entity_disowned.disowned`)."""
    spans = [m.span() for name in right for m in _mentions(text, name)]
    lowered = {name.lower() for name in known}
    ids = _spelled_ids(text, lowered, {1, 2, 3})
    others = [
        lo
        for _, lo, hi in ids
        if not rejected(text, lo, hi) and not any(a < hi and lo < b for a, b in spans)
    ]
    return disowned(text, spans, others)
