"""The right entity named and then disowned (docs/grading.md, "Entities", "Disowned").

"Refunds are not recorded in sales.refunds - that table only holds return requests; the
money paid back is in finance.payments" names the right table only to send the reader to
another one. A mention of a right entity is **disowned** when its clause carries a negative
or contrast marker (:func:`mention_stance`) and the answer offers another catalog id; the
grade then fails, or is uncertain where the marker may be about something else ("sales.refunds
does not include chargebacks; those are in finance.chargebacks").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

CLEAN, UNCERTAIN, DISOWNED = "clean", "uncertain", "disowned"

_BREAK = r"[.;!?\n()—–]|[ \t]-[ \t]|\b(?:but|however|while|whereas)\b"
_BREAK_RE = re.compile(_BREAK, re.IGNORECASE)
_AFTER_BREAK_RE = re.compile(_BREAK + r"|,", re.IGNORECASE)
_BACK_REFERENCE_RE = re.compile(
    r"^[ \t,:;(—–-]*(?:(?:but|and|as)[ \t]+)?(?:that|it|this|which|they)\b[^.;!?\n()—–]*",
    re.IGNORECASE,
)
"""A clause right after the mention that refers back to it ("- that table only holds ...",
"(it's empty)", ", but that's only the archive")."""
_BEFORE_RE = re.compile(
    r"\b(?:not|no|never)\b|n't\b|\bskip|\bignore|\bcontrary\b|\bexpect|\bthought\b"
    r"|\b(?:would|'d)[ \t]+have[ \t]+(?:said|guessed|picked|thought)",
    re.IGNORECASE,
)
"""Markers before a right mention in its clause: "not recorded in X", "Not in X", "You might
expect X", "I'd have said X", "Contrary to its name, X ..."."""
_VERDICT_RE = re.compile(
    r"(?<!not )(?<!n't )(?<!never )\b(?:stale|retired|archived?|archives|incomplete"
    r"|red[ \t]+herring|empty|outdated|obsolete|deprecated|legacy|superseded|misleading|wrong"
    r"|unused|abandoned|frozen|only[ \t]+(?:holds?|has|have|contains?|stores?|keeps?|covers?"
    r"|records?|lists?|tracks?|the)|(?:is|'s|are)[ \t]+only)\b",
    re.IGNORECASE,
)
"""Verdicts after a right mention (or in a clause referring back to it): "is stale", "has
been retired", "only holds the survey invitations", "that's only the archive"."""
_NEGATION_RE = re.compile(r"\b(?:not|never|no)\b|n't\b", re.IGNORECASE)
_REDIRECT_RE = re.compile(
    r"\b(?:use|try|query|instead|actually|really|in[ \t]+fact|now|themselves|rather)\b",
    re.IGNORECASE,
)
"""A redirect to the other id ("use finance.payments", "... instead"): a negation after the
right name then disowns it outright."""


def _before(text: str, start: int) -> str:
    breaks = [m.end() for m in _BREAK_RE.finditer(text, 0, start)]
    return text[breaks[-1] if breaks else 0 : start]


def _after(text: str, end: int) -> str:
    stop = _AFTER_BREAK_RE.search(text, end)
    hi = stop.start() if stop else len(text)
    back = _BACK_REFERENCE_RE.match(text, hi)
    return text[end:hi] + (" " + back.group(0) if back else "")


def mention_stance(text: str, start: int, end: int, redirect: bool) -> str:
    """How the right mention at ``text[start:end]`` is used: disowned (a marker before it
    or a verdict after it), uncertain (a negation after it without a ``redirect`` to
    another id), or clean."""
    after = _after(text, end)
    if _BEFORE_RE.search(_before(text, start)) or _VERDICT_RE.search(after):
        return DISOWNED
    if _NEGATION_RE.search(after):
        return DISOWNED if redirect else UNCERTAIN
    return CLEAN


def disowned(text: str, spans: Sequence[tuple[int, int]], others: Sequence[int]) -> str:
    """The stance of the answer towards its right mentions ``spans`` when it offers other
    ids (starting at ``others``): clean if any mention is clean (or no other id is offered),
    else disowned if any mention is, else uncertain."""
    if not spans or not others:
        return CLEAN
    redirect = any(_REDIRECT_RE.search(_before(text, start)) for start in others)
    redirect = redirect or any(_REDIRECT_RE.search(_after(text, start)) for start in others)
    stances = {mention_stance(text, lo, hi, redirect) for lo, hi in spans}
    for stance in (CLEAN, DISOWNED):
        if stance in stances:
            return stance
    return UNCERTAIN
