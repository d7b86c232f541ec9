"""The form a question asks its number in, and answers rewritten to read in that form.

``asked_form`` reads the question (a percentage, a count, a time unit, a month number, an hour
of the day, a change, an amount of money); ``normalised`` and ``words_read`` rewrite an
answer's sentences so the numeric grader reads them as asked (docs/grading.md, "Numeric",
rule 9): LaTeX escapes, month names, ``8 PM``, decreases as negative changes, other time
units, basis points and lone number words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dabench.grading.direction import signed_changes
from dabench.grading.numbers import ONES, TENS, find_all_numbers

_ONES_WORDS: tuple[str, ...] = tuple(ONES)


@dataclass(frozen=True)
class AskedForm:
    """What form the question asks the number in (:func:`asked_form`)."""

    percent: bool = False
    """A percentage (``what percentage``, ``give a percentage``): ``405%`` is not 4.05."""
    count: bool = False
    """A count (``how many`` products, no unit, no percentage): a percentage is not one."""
    unit: str | None = None
    """The time unit asked (``in hours``, ``how many days``): other units are converted."""
    month: bool = False
    """A month number (``month number (1-12)``): month names are read as numbers."""
    hour: bool = False
    """An hour of the day: ``8 PM`` is 20."""
    signed: bool = False
    """A change (``by what percentage did ... change/grow``): ``fell by``, ``down``,
    ``a decrease of``, ``minus`` make the value negative."""
    money: bool = False
    """An amount of money: a bare figure to the cent is of a currency amount's kind."""
    scale: bool = False
    """A score or rating (``score (1 to 5)``, ``rating``): ``4.1/5`` is 4.1 on that scale."""


_PERCENT_Q_RE = re.compile(r"\bpercent(?:age)?s?\b|%", re.IGNORECASE)
_UNIT_HOURS = {"second": 1 / 3600, "minute": 1 / 60, "hour": 1.0, "day": 24.0, "week": 168.0}
_UNIT_Q_RE = re.compile(
    r"\b(?:how many|in|number of|in whole|in calendar)[ \t]+(second|minute|hour|day|week)s\b",
    re.IGNORECASE,
)
_MONTH_Q_RE = re.compile(r"\bmonth number\b|\bmonth \(1-12\)|\(1[-–]12\)", re.IGNORECASE)
_HOUR_Q_RE = re.compile(r"\bhour of (?:the )?day\b|\(0[-–]23\b", re.IGNORECASE)
_CHANGE_Q_RE = re.compile(
    r"\b(?:change[ds]?|grow|grew|growth|increase[ds]?|rise|rose)\b", re.IGNORECASE
)
_FALL_Q_RE = re.compile(
    r"\bdid\b[^?.]*\b(?:fall|drop|decline|decrease|shrink|go down)\b", re.IGNORECASE
)
_MONEY_Q_RE = re.compile(
    r"\b(?:revenue|sales|spend|spent|cost|costs|price|budget|amount|dollars?|paid|payments?"
    r"|refunds?|income|profit)\b|\$",
    re.IGNORECASE,
)


_SCALE_Q_RE = re.compile(r"\b(?:score|rating|rated|stars?|scale)\b", re.IGNORECASE)
_SCALE_RE = re.compile(
    r"(?<![\d.,])(?P<x>\d{1,3}(?:\.\d+)?)(?P<of>[ \t]*(?:/|out of)[ \t]*(?P<n>5|10|100))"
    r"(?![\d.,]\d)",
    re.IGNORECASE,
)
_FOOTNOTE_REF_RE = re.compile(r"\[\^[\w-]+\](?!:)")
_PLAIN_INT_RE = re.compile(r"(?<![\w.,:$€£¥₹−-])\d+(?![\w%:]|[.,]\d|[ \t]*[%$€£¥₹])")


def _scaled(match: re.Match[str]) -> str:
    """``4.1/5`` -> ``4.1``: a score on its scale (the numerator at most the scale)."""
    fits = float(match.group("x")) <= float(match.group("n"))
    return match.group("x") if fits else match.group(0)


def _out_of_range(text: str, top: int) -> str:
    """Integers above ``top`` (a month number is 1-12, an hour 0-23) glued to a letter so
    they are not read as the asked value (``21 tickets`` beside month 12)."""
    return _PLAIN_INT_RE.sub(
        lambda m: m.group(0) if int(m.group(0)) <= top else f"n{m.group(0)}", text
    )


def asked_form(question: str) -> AskedForm:
    """The form the question asks the number in (see :class:`AskedForm`)."""
    percent = bool(_PERCENT_Q_RE.search(question))
    unit = _UNIT_Q_RE.search(question)
    month = bool(_MONTH_Q_RE.search(question))
    hour = bool(_HOUR_Q_RE.search(question))
    plain = not (percent or unit or month or hour)
    count = plain and bool(re.search(r"\bhow many\b", question, re.IGNORECASE))
    return AskedForm(
        percent=percent,
        count=count,
        unit=unit.group(1).lower() if unit else None,
        month=month,
        hour=hour,
        signed=bool(_CHANGE_Q_RE.search(question)) and not _FALL_Q_RE.search(question),
        money=plain and not count and bool(_MONEY_Q_RE.search(question)),
        scale=bool(_SCALE_Q_RE.search(question)),
    )


_MONTHS: tuple[str, ...] = tuple(
    [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ]
)
_MONTH_RE = re.compile(
    r"\b(?:(?P<full>" + "|".join(_MONTHS) + r")|(?P<abbr>Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?"
    r"|Oct|Nov|Dec)\.?)(?![\w-])"
)
_PM_RE = re.compile(r"(?<![\w:.,])(?P<h>1[0-2]|0?[1-9])(?::00)?[ \t]?(?P<m>[AaPp])\.?[Mm]\b\.?")
_UNIT_AFTER_RE = re.compile(
    r"^[ \t]?(?P<unit>sec(?:ond)?s?|min(?:ute)?s?|h(?:ou)?rs?|hours?|days?|weeks?|wks?)\b",
    re.IGNORECASE,
)
_BASIS_POINTS_RE = re.compile(r"^[ \t]?(?:basis[ \t]+points?|bps?)\b", re.IGNORECASE)
_LONE_WORDS: tuple[str, ...] = (*_ONES_WORDS, *TENS)
_LONE_WORD_RE = re.compile(
    r"(?<![\w-])(?P<w>" + "|".join(_LONE_WORDS) + r")(?![\w-])"
    r"(?![ \t]+(?:of|another|by|hundred|thousand|million|billion|point|and|or)\b)",
    re.IGNORECASE,
)
_DOZEN_RE = re.compile(r"\b(?:half a|a|one) dozen\b", re.IGNORECASE)
_NOT_A_COUNT_BEFORE_RE = re.compile(
    r"\b(?:no|any|each|every|the|this|that|which|some|a|another|per|than|only the)[ \t]+$",
    re.IGNORECASE,
)


def _unit_key(word: str) -> str:
    word = word.lower().rstrip("s")
    for unit in _UNIT_HOURS:
        if unit.startswith(word[:3]) or (word in ("h", "hr") and unit == "hour"):
            return unit
    return word


def _plain(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _converted(text: str, form: AskedForm) -> str:
    """``text`` with numbers in another time unit (``49.9 minutes`` for hours) converted to
    the asked one, and basis points to a percentage (``405 basis points`` -> ``4.05%``)."""
    for mention in reversed(find_all_numbers(text)):
        if mention.ambiguous or mention.percent or mention.currency:
            continue
        tail = text[mention.end :]
        unit = _UNIT_AFTER_RE.match(tail)
        if form.unit and unit and _unit_key(unit.group("unit")) in _UNIT_HOURS:
            factor = _UNIT_HOURS[_unit_key(unit.group("unit"))] / _UNIT_HOURS[form.unit]
            if factor != 1.0:
                new = f"{_plain(mention.value * factor)} {form.unit}s"
                text = text[: mention.start] + new + tail[unit.end() :]
        points = _BASIS_POINTS_RE.match(tail)
        if form.percent and points:
            new = f"{_plain(mention.value / 100)}%"
            text = text[: mention.start] + new + tail[points.end() :]
    return text


def normalised(text: str, form: AskedForm) -> str:
    """``text`` rewritten so numbers read as the question asks them (docs/grading.md,
    "Numeric", rule 9): LaTeX escapes dropped, month names as month numbers, ``8 PM`` as 20,
    a decrease as a negative change, other time units and basis points converted."""
    text = text.replace("\\$", "$").replace("{,}", ",").replace("\\%", "%")
    text = _FOOTNOTE_REF_RE.sub("", text)
    if form.scale:
        text = _SCALE_RE.sub(_scaled, text)
    if form.month:
        text = _out_of_range(_MONTH_RE.sub(lambda m: str(_month_number(m.group(0))), text), 12)
    if form.hour:
        text = _out_of_range(_PM_RE.sub(_hour_of_day, text), 23)
    if form.signed:
        text = signed_changes(text)
    return _converted(text, form) if form.unit or form.percent else text


def _month_number(name: str) -> int:
    key = name.rstrip(".")[:3].lower()
    return next(i for i, full in enumerate(_MONTHS, 1) if full[:3].lower() == key)


def _hour_of_day(match: re.Match[str]) -> str:
    hour = int(match.group("h")) % 12
    return str(hour + 12 if match.group("m").lower() == "p" else hour)


def words_read(sentence: str) -> str:
    """``sentence`` with lone number words written as digits (``Twelve key accounts`` ->
    ``12 key accounts``), except in prose: ``one of``, ``no one``, ``each one``, ``one by
    one``; ``one`` only when the sentence has no digit (``4 stores, one in each state``)."""
    sentence = _DOZEN_RE.sub(lambda m: "6" if m.group(0)[0] in "hH" else "12", sentence)
    has_digit = bool(re.search(r"\d", sentence))
    read = [(m.start, m.end) for m in find_all_numbers(sentence) if not m.text[:1].isdigit()]

    def digits(match: re.Match[str]) -> str:
        word = match.group("w").lower()
        overlaps = any(a < match.end() and match.start() < b for a, b in read)
        if (word == "one" and has_digit) or overlaps:
            return match.group(0)
        if _NOT_A_COUNT_BEFORE_RE.search(sentence[: match.start()]):
            return match.group(0)
        if word in _ONES_WORDS:
            return str(_ONES_WORDS.index(word))
        return str(20 + 10 * _LONE_WORDS[len(_ONES_WORDS) :].index(word))

    return _LONE_WORD_RE.sub(digits, sentence)
