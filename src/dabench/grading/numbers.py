"""Find the numbers written in an answer: thousands separators, currency signs, percentages,
negative signs and magnitude words.

Supported: ``1234``, ``1,234,567.89`` (comma thousands separators), ``$1,234.50`` / ``€12``,
``-5`` / ``−5`` / ``-$5`` / ``$-5``, ``12.5%`` (kept as 12.5, flagged as a percentage),
``1.2k`` / ``3 million`` / ``2bn``, scientific ``2.6e+06``. Dates (``2024-03-31``),
year-months (``2024-03``) and numbers glued to letters (``FY2024``, ``Q3``, ``v1.2``) are not
numbers. European separators (``1.234,50``) are not supported: they read as two numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DATE_RE = re.compile(
    r"\b\d{4}-\d{2}(?:-\d{2})?(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
)
_NUMBER_RE = re.compile(
    r"""
    (?<![\w.,])
    (?P<sign>[-−+])?
    (?P<cur>[$€£¥])?
    (?P<sign2>[-−])?
    (?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)
    (?P<exp>[eE][+-]?\d{1,3})?
    (?:
        (?P<pct>\s?%)
      | \s?(?P<word>thousand|million|billion)\b
      | (?P<suffix>k|K|M|MM|B|bn|BN)\b
    )?
    (?![\w])
    """,
    re.VERBOSE,
)
_MULTIPLIER = {
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "m": 1e6,
    "mm": 1e6,
    "billion": 1e9,
    "b": 1e9,
    "bn": 1e9,
}


@dataclass(frozen=True)
class NumberMention:
    """One number found in a text."""

    text: str
    """The characters as written (``$1,234.50``)."""
    value: float
    """The value with sign and magnitude applied (``1234.5``); a percentage keeps its digits
    (``12.5%`` -> 12.5)."""
    percent: bool = False

    def readings(self) -> tuple[float, ...]:
        """The values this mention may stand for: a percentage reads as ``p`` and ``p/100``."""
        return (self.value, self.value / 100.0) if self.percent else (self.value,)


def find_numbers(text: str) -> list[NumberMention]:
    """Every number mentioned in ``text``, in order."""
    cleaned = _DATE_RE.sub(lambda m: " " * len(m.group(0)), text)
    found: list[NumberMention] = []
    for match in _NUMBER_RE.finditer(cleaned):
        value = float(match.group("num").replace(",", "") + (match.group("exp") or ""))
        word = match.group("word") or match.group("suffix")
        if word:
            value *= _MULTIPLIER[word.lower()]
        if (match.group("sign") or "") in ("-", "−") or match.group("sign2"):
            value = -value
        found.append(
            NumberMention(
                text=match.group(0).strip(), value=value, percent=bool(match.group("pct"))
            )
        )
    return found


def is_single_number(text: str) -> NumberMention | None:
    """The number when ``text`` is exactly one number (currency sign, %, separators allowed;
    surrounding whitespace, backticks and ``**`` emphasis ignored), else ``None``."""
    stripped = text.strip().strip("`*_ \t\n")
    numbers = find_numbers(stripped)
    if len(numbers) != 1 or numbers[0].text != stripped:
        return None
    return numbers[0]


def format_number(value: float) -> str:
    """A number for reasons, never in exponent notation: integers with thousands separators,
    others with up to 4 decimals (6 significant digits below 1)."""
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 1:
        return f"{value:,.4f}".rstrip("0").rstrip(".")
    return f"{value:.6f}".rstrip("0").rstrip(".") if abs(value) >= 1e-6 else f"{value:.6g}"
