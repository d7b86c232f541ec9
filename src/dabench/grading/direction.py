"""The direction of a change stated in words (docs/grading.md, "Numeric", rule 11).

For a question that asks how a value changed (:attr:`AskedForm.signed`), an unsigned number
is read with the direction words right around it: a decrease word before it (``declined``,
``fell``, ``down``, ``↓``, ``a drop of``) or after it (``lower``, ``fewer``, ``below``, ``a
43.9% decline``) makes it negative; an increase word (``rose``, ``up``, ``↑``, ``higher``,
``growth``) keeps it positive; a signed number keeps its sign. A sentence with words of
both directions cannot be read (:func:`mixed_direction`).
"""

from __future__ import annotations

import re

from dabench.grading.numbers import find_all_numbers

_DOWN_VERBS = (
    r"fell|fall(?:s|ing)?|dropped|drop(?:s|ping)?|declined|declin(?:e|es|ing)|decreased"
    r"|decreas(?:e|es|ing)|shrank|shrunk|shrink(?:s|ing)?|slid|slides|slipped|slips|plunged"
    r"|plunges|plummeted|sank|sunk|sinks|tumbled|contracted|reduced|dipped|went down"
    r"|(?:is|was|were|are) down|(?:is|was|were|are) lower|lower|down|minus|negative|↓|▼|🔻"
)
_UP_VERBS = (
    r"rose|rises?|rising|grew|grows?|growing|increased|increas(?:e|es|ing)|gained|gains?"
    r"|jumped|jumps?|climbed|climbs?|soared|surged|went up|(?:is|was|were|are) up"
    r"|(?:is|was|were|are) higher|higher|up|plus|positive|↑|▲|🔺"
)
_DOWN_NOUNS = r"decrease|decline|drop|fall|reduction|contraction|dip|loss|shrinkage"
_UP_NOUNS = r"increase|rise|growth|gain|jump|climb|uptick"
_DOWN_AFTER = r"lower|fewer|less|below|down|smaller|" + _DOWN_NOUNS
_UP_AFTER = r"higher|more|above|up|larger|greater|bigger|" + _UP_NOUNS
_FILL = r"(?:[ \t]+(?:by|of|about|around|roughly|approximately|nearly|almost|some))*"


def _before(verbs: str, nouns: str) -> re.Pattern[str]:
    return re.compile(
        rf"(?:(?<![\w-])(?:{verbs})(?![\w-]){_FILL}"
        rf"|\b(?:a|an)[ \t]+(?:{nouns})[ \t]+of{_FILL})[ \t*_]*$",
        re.IGNORECASE,
    )


def _after(words: str) -> re.Pattern[str]:
    return re.compile(
        rf"^[ \t*_]*(?:points?[ \t]+|percent(?:age points?)?[ \t]+|pp[ \t]+)?(?:{words})\b",
        re.IGNORECASE,
    )


_DOWN_BEFORE_RE = _before(_DOWN_VERBS, _DOWN_NOUNS)
_UP_BEFORE_RE = _before(_UP_VERBS, _UP_NOUNS)
_DOWN_AFTER_RE = _after(_DOWN_AFTER)
_UP_AFTER_RE = _after(_UP_AFTER)
_DOWN_WORD_RE = re.compile(
    rf"(?<![\w-])(?:{_DOWN_VERBS}|{_DOWN_AFTER})(?![\w-])|↓|▼|🔻", re.IGNORECASE
)
_UP_WORD_RE = re.compile(rf"(?<![\w-])(?:{_UP_VERBS}|{_UP_AFTER})(?![\w-])|↑|▲|🔺", re.IGNORECASE)
_SIGN_BEFORE_RE = re.compile(r"[-−+–][ \t]*$")
_EN_DASH_MINUS_RE = re.compile(r"(?<![\w.,%)])[ \t]*–(?=\d)")
_ACCOUNTING_PERCENT_RE = re.compile(r"(?<![\w)])\((?=\d[\d.,]*%\))")


def direction(text: str, start: int, end: int) -> int:
    """-1 when the words right around ``text[start:end]`` (a number) say it is a decrease, 1
    for an increase, 0 when they say neither or both."""
    before, after = text[max(0, start - 40) : start], text[end : end + 40]
    down = bool(_DOWN_BEFORE_RE.search(before) or _DOWN_AFTER_RE.match(after))
    up = bool(_UP_BEFORE_RE.search(before) or _UP_AFTER_RE.match(after))
    return 0 if down == up else (-1 if down else 1)


def signed_changes(text: str) -> str:
    """``text`` with every unsigned number that a decrease word is next to written negative
    (``declined 43.9%`` -> ``declined −43.9%``, ``4.1% lower`` -> ``−4.1% lower``), an en
    dash before a number read as a minus (``–43.9%``) and a percentage alone in parentheses
    (``(43.9%)``) as a negative change."""
    text = _ACCOUNTING_PERCENT_RE.sub("(−", text)
    text = _EN_DASH_MINUS_RE.sub(lambda m: m.group(0).replace("–", "−"), text)
    for mention in reversed(find_all_numbers(text)):
        if mention.value < 0 or _SIGN_BEFORE_RE.search(text[: mention.start]):
            continue
        if direction(text, mention.start, mention.end) < 0:
            text = f"{text[: mention.start]}−{text[mention.start :]}"
    return text


def mixed_direction(sentence: str) -> bool:
    """True when ``sentence`` holds words of both directions (``24.0% lower, i.e. up``)."""
    return bool(_DOWN_WORD_RE.search(sentence)) and bool(_UP_WORD_RE.search(sentence))
