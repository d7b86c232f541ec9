"""Text forms the entity grader reads besides a plain catalog id (docs/grading.md, "Entities").

- :func:`plain_identifiers`: quoted SQL identifiers (``"sales"."orders"``, `` `support`.`x` ``)
  and the DuckDB catalog prefix (``warehouse.sales.orders``) written as the catalog id.
- :func:`denied_before` / :func:`rejected_after`: a name inside a statement that it does not
  exist ("there is no revenue policy page"), or followed by a verdict against it
  ("sales.orders is not the source of truth", "... is deprecated").
- :func:`slug_candidates`: other hyphenated ids (knowledge pages, glossary terms, curated
  queries) offered next to the right one.
- :func:`prose_candidates`: other tables or columns written in words ("the orders_raw table in
  staging", "the is_deleted flag"), which count only as alternatives (after ``or``/a hedge).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

CATALOG = "warehouse"
CROSS = "(?:❌|✗|✘|🚫|⛔)"
"""A cross mark: a name right before or after one is rejected ("| core.orders | ❌ |")."""
"""The name of the world's DuckDB catalog (the platform opens ``warehouse.duckdb``)."""

_PART = r'[`"]?\w+[`"]?'
_QUALIFIED_RE = re.compile(rf"(?<![\w.])(?:{_PART})(?:\.(?:{_PART}))+(?![\w])")
_QUOTED_DOT_RE = re.compile(r'[`"]\.|\.[`"]')
_CATALOG_RE = re.compile(rf"(?<![\w.-]){CATALOG}\.(?=[A-Za-z_]\w*\.[A-Za-z_])", re.IGNORECASE)


def _unquote(match: re.Match[str]) -> str:
    name = match.group(0)
    if not _QUOTED_DOT_RE.search(name):
        return name
    return name[0] + name[1:-1].replace('"', "").replace("`", "") + name[-1]


def plain_identifiers(text: str) -> str:
    """``text`` with dotted quoted identifiers unquoted (``"sales"."orders"`` ->
    ``sales.orders``) and the catalog prefix dropped where two more parts follow
    (``warehouse.sales.orders`` -> ``sales.orders``)."""
    return _CATALOG_RE.sub("", _QUALIFIED_RE.sub(_unquote, text))


_NOT = r"(?:[ \t]+not|n['’]t)"
_DENIAL_RE = re.compile(
    r"\bthere(?:[ \t]+(?:is|are|was|were)|['’]s)[ \t]+no\b(?![ \t]+(?:doubt|need|question"
    r"|other|reason|ambiguity|problem|issue|confusion|better|alternative)\b)|\bno[ \t]+such\b"
    rf"|\b(?:could|can|did|do|does){_NOT}[ \t]+(?:find|locate|see|identify|spot)\b"
    r"|\bcannot[ \t]+(?:find|locate|see|identify)\b|\bunable[ \t]+to[ \t]+(?:find|locate)\b"
    r"|\bfailed[ \t]+to[ \t]+find\b|\bfound[ \t]+no\b",
    re.IGNORECASE,
)
_DENIAL_BREAK_RE = re.compile(
    r"[.,;:!?\n()]|\b(?:but|however|though|although|other[ \t]+than|besides|except|apart"
    r"[ \t]+from|beyond|than)\b",
    re.IGNORECASE,
)


def denied_before(text: str, start: int) -> bool:
    """True when the name at ``start`` sits in a clause that denies it exists: "there is no
    revenue policy page", "I could not find a page about internal test accounts" (no clause
    break, ``but``, ``other than``... between the denial and the name)."""
    window = text[max(0, start - 80) : start]
    breaks = [m.end() for m in _DENIAL_BREAK_RE.finditer(window)]
    return bool(_DENIAL_RE.search(window[breaks[-1] if breaks else 0 :]))


_COPULA = r"[ \t]+(?:is|are|was|were)"
_ARTICLE = r"(?:[ \t]+(?:the|a|an))?"
_NOT_WHAT = (
    r"right|correct|source|authoritative|canonical|recommended|appropriate|valid|master|answer"
    r"|system[ \t]+of[ \t]+record|what[ \t]+you[ \t]+(?:want|need)"
    r"|(?:table|dataset|column|page|one)(?:[ \t]+(?:to[ \t]+use|you[ \t]+(?:want|need)))?"
    r"(?=[ \t]*(?:[.;:,!?)\n]|-[ \t]|$))"
)
_BAD = (
    r"deprecated|wrong|incorrect|obsolete|outdated|legacy|retired|superseded|stale|incomplete"
    r"|raw|unvalidated|unreliable|archived|misleading|(?:a[ \t]+)?red[ \t]+herring"
    r"|no[ \t]+longer[ \t]+(?:used|maintained|updated|valid|current|supported)"
)
_REJECTED_AFTER_RE = re.compile(
    r"^[`'\"*]*(?:[ \t]+(?:page|table|dataset|view|column|query|term|entry))?(?:"
    rf"{_COPULA}{_NOT}{_ARTICLE}[ \t]+(?:{_NOT_WHAT})\b"
    rf"|(?:{_COPULA}|[ \t]+ha(?:s|ve|d)[ \t]+been)(?:[ \t]+(?:now|also))?{_ARTICLE}"
    rf"[ \t]+(?:{_BAD})\b"
    rf"|[ \t|:)(—–-]*{CROSS}"
    rf"|[ \t]+(?:should|must|shall|can){_NOT}[ \t]+be[ \t]+(?:used|trusted|relied[ \t]+on)\b"
    r"|[ \t]+should[ \t]+be[ \t]+avoided\b"
    rf"|[ \t]+(?:does|did|do){_NOT}[ \t]+exist\b"
    r")",
    re.IGNORECASE,
)


def rejected_after(text: str, end: int) -> bool:
    """True when the name ending at ``end`` is followed by a verdict against it: "is not the
    source of truth", "isn't the right table", "is deprecated", "has been retired", "is a
    red herring", "should not be used", "does not exist", a cross mark ("| ❌ deprecated |")
    ("is not deprecated" and "is not pre-aggregated" are not)."""
    return bool(_REJECTED_AFTER_RE.search(text[end : end + 80]))


_SLUG_RE = re.compile(
    r"(?<![\w.:/-])(?:[a-z]+:)?[a-z0-9]+(?:-[a-z0-9]+)+(?![\w])(?![.-]\w)", re.IGNORECASE
)
_CODE_OR_NOUN_RE = re.compile(r"^[ \t]*(?:page|term|query|entry)\b", re.IGNORECASE)
_NOUN_BEFORE_RE = re.compile(r"\b(?:page|term|query|entry|id)[ \t]*:?[ \t]*$", re.IGNORECASE)
_HEDGE_BEFORE_RE = re.compile(
    r"\b(?:alternatively|maybe|perhaps|possibly|probably|or|either)[ \t,:]+"
    r"(?:(?:try|use|see|check|consider|also|just|the)[ \t]+){0,2}[`'\"]?$",
    re.IGNORECASE,
)
_CHAIN_GAP_RE = re.compile(
    r"(?:[ \t,/`'\"*]|\n[ \t]*(?:[-*+]|\d+[.)])?[ \t]*"
    r"|\b(?:or|and|nor|either|maybe|perhaps|possibly|probably|alternatively|also|both)\b)*",
    re.IGNORECASE,
)


def _id_like(text: str, match: re.Match[str]) -> bool:
    """A slug written as an id (in backticks or quotes, with a ``page:`` prefix, next to
    ``page`` / ``term`` / ``query`` / ``id``) or offered right after a hedge word or ``or``
    ("Alternatively, try fiscal-calendar")."""
    before, after = text[: match.start()], text[match.end() :]
    quoted = before[-1:] in ("`", '"', "'") and after[:1] == before[-1:]
    return (
        quoted
        or ":" in match.group(0)
        or bool(_CODE_OR_NOUN_RE.match(after) or _NOUN_BEFORE_RE.search(before))
        or bool(_HEDGE_BEFORE_RE.search(before[-60:]))
    )


def _chained(text: str, span: tuple[int, int], anchors: Sequence[tuple[int, int]]) -> bool:
    """True when only separators, ``or``/``and`` and hedge words lie between ``span`` and
    one of ``anchors`` (a list or an alternation of ids)."""
    for lo, hi in anchors:
        gap = text[hi : span[0]] if hi <= span[0] else text[span[1] : lo] if span[1] <= lo else None
        if gap is not None and _CHAIN_GAP_RE.fullmatch(gap):
            return True
    return False


def slug_candidates(
    text: str, known: Sequence[str], right_spans: Sequence[tuple[int, int]]
) -> list[tuple[str, int, int]]:
    """Hyphenated ids other than ``known`` that ``text`` offers: written as an id
    (:func:`_id_like`) or listed with the right one (``either revenue-policy or
    fiscal-calendar``; ``revenue-policy, fiscal-calendar, test-accounts``). Hyphenated words
    in prose ("order-level, net-of-refunds revenue") are not collected."""
    lowered = {name.lower() for name in known}
    slugs = [
        m
        for m in _SLUG_RE.finditer(text)
        if m.group(0).lower() not in lowered
        and not any(lo < m.end() and m.start() < hi for lo, hi in right_spans)
    ]
    found = {m.start() for m in slugs if _id_like(text, m)}
    anchors = list(right_spans)
    grew = True
    while grew:
        grew = False
        for m in slugs:
            if m.start() not in found and _chained(text, m.span(), anchors):
                found.add(m.start())
                anchors.append(m.span())
                grew = True
    return [(m.group(0), m.start(), m.end()) for m in slugs if m.start() in found]


_Q = r"[`'\"]?"
_NOT_SCHEMA = {"warehouse", "catalog", "database", "db", "same", "knowledge", "platform", "main"}
_TABLE_IN_RE = re.compile(
    rf"\b{_Q}(\w+){_Q}[ \t]+(?:table|dataset|view)[ \t]+(?:in|of|from)[ \t]+(?:the[ \t]+)?"
    rf"{_Q}(\w+){_Q}",
    re.IGNORECASE,
)
_BARE_TABLE_RE = re.compile(rf"\b{_Q}([a-z]\w*_\w+){_Q}[ \t]+(?:table|dataset|view)\b")
_COLUMN_OF_RE = re.compile(
    rf"\b{_Q}(\w+){_Q}[ \t]+(?:column|field|flag|attribute)[ \t]+(?:of|in|on|from)[ \t]+"
    rf"(?:the[ \t]+)?{_Q}(\w+\.\w+){_Q}",
    re.IGNORECASE,
)
_BARE_COLUMN_RE = re.compile(
    rf"\b{_Q}([a-z]\w*_\w+){_Q}[ \t]+(?:column|field|flag|attribute)\b"
    rf"|\b(?:column|field|flag)[ \t]+{_Q}([a-z]\w*_\w+)\b"
)


def _prose_forms(text: str, dots: int) -> list[tuple[str, int, int]]:
    if dots == 1:
        found = [
            (f"{m.group(2)}.{m.group(1)}", m.start(), m.end())
            for m in _TABLE_IN_RE.finditer(text)
            if m.group(2).lower() not in _NOT_SCHEMA
        ]
        return found + [(m.group(1), m.start(), m.end()) for m in _BARE_TABLE_RE.finditer(text)]
    if dots == 2:
        found = [
            (f"{m.group(2)}.{m.group(1)}", m.start(), m.end()) for m in _COLUMN_OF_RE.finditer(text)
        ]
        bare = _BARE_COLUMN_RE.finditer(text)
        return found + [(m.group(1) or m.group(2), m.start(), m.end()) for m in bare]
    return []


def prose_candidates(text: str, right: Sequence[str], dots: int) -> list[tuple[str, int, int]]:
    """Other tables (``dots`` 1) or columns (``dots`` 2) named in words: "the orders_raw
    table in staging" (``staging.orders_raw``), "the unit_price column of sales.order_lines",
    "the is_deleted flag". A right entity (or, for a bare name, its last part: "the
    row_state column") is left out; a form read both ways is kept once, qualified."""
    lowered = {name.lower() for name in right}
    lasts = {name.lower().rsplit(".", 1)[-1] for name in right}
    seen: dict[int, tuple[str, int, int]] = {}
    for name, start, end in _prose_forms(text, dots):
        low = name.lower()
        if low not in (lowered if "." in low else lasts):
            seen.setdefault(start, (name, start, end))
    return sorted(seen.values(), key=lambda c: c[1])


_REJECT_HEADING_RE = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]*)?(?:why[ \t]+not\b|not[ \t]+these\b"
    r"|not[ \t]+the[ \t]+(?:others|answer)|rejected\b|ruled[ \t]+out\b"
    r"|(?:do[ \t]+not|don't)[ \t]+use\b|avoid\b)"
    r"(?:[^\n.]{0,40}:|[^\n.:]{0,40})[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_SECTION_END_RE = re.compile(r"^[ \t]*#|\n[ \t]*\n(?![ \t]*(?:[-*+•]|\d+[.)])[ \t])", re.MULTILINE)


def under_rejecting_heading(text: str, start: int) -> bool:
    """True when ``start`` lies under a heading that rejects what follows ("## Why not the
    others", "Not these:", "Ruled out": a short line with no dotted name), up to the next
    heading or paragraph that is not a list item."""
    for heading in _REJECT_HEADING_RE.finditer(text, 0, start):
        end = _SECTION_END_RE.search(text, heading.end())
        if start < (end.start() if end else len(text)):
            return True
    return False


_OFFER_RE = re.compile(
    r"(?:^|(?<=[.!?\n]))[ \t]*(?:want[ \t]+me[ \t]+to|would[ \t]+you[ \t]+like"
    r"|do[ \t]+you[ \t]+want|shall[ \t]+i|should[ \t]+i|can[ \t]+i|may[ \t]+i"
    r"|i[ \t]+can[ \t]+also)\b"
    r"(?:[^.!?\n]|\.(?=\w))*\?",
    re.IGNORECASE,
)


def without_offers(text: str) -> str:
    """``text`` without offer questions to the user after an answer ("Want me to also show
    how it relates to core.orders?", "Shall I compare it with ...?"): a name there is
    neither an answer nor a candidate. A text that is only a question keeps it."""
    stripped = _OFFER_RE.sub("", text)
    return stripped if stripped.strip() else text
