"""Round-four rules on other values around the committed one (docs/grading.md, "Numeric",
rule 11): a sub-total (``15 ..., out of 40 overall``), a correction inside the committed
sentence (``164 — make that 171``, ``so the team has 4``), and another value of the truth's
kind in a sentence after the committed one."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from dabench.grading.numbers import NumberMention, find_all_numbers

Candidate = Callable[[str, NumberMention], bool]
"""Whether a number in a text is a candidate of the truth's kind (not the truth, not a
reference, a year, a restatement...)."""

_SUBTOTAL_BEFORE_RE = re.compile(r"\b(?:out of|across)[ \t]+$", re.IGNORECASE)
_WORDS_AFTER_RE = re.compile(r"^[ \t]+([\w-]+)(?:[ \t]+([\w-]+))?")
_TOTAL_WORDS = frozenset({"overall", "total", "in", "altogether", "all"})
_SELF_CORRECTION_RE = re.compile(
    r"\b(?:so|therefore|thus|hence|make that|no wait|wait|i mean|scratch that|or rather)\b",
    re.IGNORECASE,
)
_OFFER_RE = re.compile(
    r"^[\W_]*(?:want me to|should i|shall i|if you(?:'d| would)? (?:like|want)|would you like"
    r"|do you want|let me know)\b|\?[ \t*_]*$|^[ \t>]*\[\^|^[ \t>]*[*_](?![*_])"
    r"|^[\W_]*(?:query|sql|runtime)\b|^[\W_]*by[ \t]+\w+(?:[ \t]+\w+)?[ \t]*:",
    re.IGNORECASE,
)
_RATE_AFTER_RE = re.compile(r"^[ \t]*%?[ \t]*(?:[A-Za-z]+[ \t]+)?(?:per|a|an|each)[ \t]", re.I)


def _words_after(text: str, end: int) -> set[str]:
    match = _WORDS_AFTER_RE.match(text[end:])
    words = match.groups() if match else ()
    return {w.lower().split("-")[-1] for w in words if w and not w[0].isdigit()}


def subtotal(sentence: str, hit: NumberMention, candidate: Candidate) -> NumberMention | None:
    """Another value right after ``out of`` / ``across`` that counts what the truth counts
    (the same noun after it, or none: ``15 urgent tickets ..., out of 40 overall``): the
    truth may be a sub-total of the asked one."""
    truth_nouns = _words_after(sentence, hit.end)
    for m in find_all_numbers(sentence):
        if m.start <= hit.end or not _SUBTOTAL_BEFORE_RE.search(sentence[: m.start]):
            continue
        if not candidate(sentence, m):
            continue
        nouns = _words_after(sentence, m.end)
        if not nouns or nouns & _TOTAL_WORDS or nouns & truth_nouns:
            return m
    return None


def self_corrected(sentence: str, hit: NumberMention, candidate: Candidate) -> NumberMention | None:
    """Another value after the truth and after a word that concludes or corrects
    (``so``, ``make that``, ``no wait``): the sentence ends on that value."""
    for m in find_all_numbers(sentence):
        if m.start <= hit.end or not candidate(sentence, m):
            continue
        if _SELF_CORRECTION_RE.search(sentence[hit.end : m.start]):
            return m
    return None


def later_rival(sentences: Iterable[str], candidate: Candidate) -> tuple[str, NumberMention] | None:
    """A value of the truth's kind in a sentence after the committed one (offers and
    questions to the user, footnotes and rates such as ``0.45 tickets per day`` aside)."""
    for text in sentences:
        if _OFFER_RE.search(text):
            continue
        for m in find_all_numbers(text):
            if candidate(text, m) and not _RATE_AFTER_RE.match(text[m.end :]):
                return text, m
    return None
