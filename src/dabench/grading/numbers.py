"""Find the numbers written in an answer: grouping separators of several locales, currency
signs, percentages, negative signs and magnitude words.

Parsed forms (docs/grading.md, "Numbers"):

- plain ``1234`` / ``1234.5`` / ``.5``; scientific ``2.6e+06``;
- comma thousands ``1,234,567.89``; Indian grouping ``12,34,567`` / ``1,00,000.50``;
- space thousands ``1 234 567`` with a normal, no-break (U+00A0), thin (U+2009) or narrow
  no-break (U+202F) space, with a ``.`` or ``,`` decimal part (``1 234,50``);
- apostrophe thousands ``1'234'567.50`` (also ``’``);
- dot thousands with a comma decimal ``1.234.567,89`` / ``1.234,5`` and a comma decimal
  ``12,5``;
- currency signs before (``$1,234.50``, ``-$5``, ``$-5``) or after (``12,50 €``), percentages
  (``12.5%`` kept as 12.5 and flagged), magnitude words and suffixes (``3 million``,
  ``1.2k``, ``2bn``, ``3 lakh``, ``2 crore``).

**Ambiguity.** ``1,234`` and ``1.234`` each have two readings (one thousand two hundred
thirty-four, or one point two three four). The text's decimal mark decides: a text that
elsewhere writes a comma decimal (``1.234,50``, ``12,5``, ``1 234,50``) and no dot decimal
is a comma-decimal text, where ``1,234`` and ``1.234`` are *ambiguous* and left unparsed;
in every other text ``1,234`` is 1234 and ``1.234`` is 1.234. ``12,5`` is 12.5 only in a
comma-decimal text, ambiguous elsewhere. An ambiguous form is reported (``ambiguous=True``), never
given a value.

Not numbers: dates (``2024-03-31``), year-months (``2024-03``), numbers glued to letters
(``FY2024``, ``Q3``, ``v1.2``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DATE_RE = re.compile(
    r"\b\d{4}-\d{2}(?:-\d{2})?(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
)
_SPACE = "[ \u00a0\u2009\u202f]"
_NUMBER_RE = re.compile(
    rf"""
    (?<![\w.,'’])
    (?P<sign>[-−+])?
    (?P<cur>[$€£¥₹])?
    (?P<sign2>[-−])?
    (?P<num>
        (?P<eu>\d{{1,3}}(?:\.\d{{3}})+,\d+)                    # 1.234,50
      | (?P<dots>\d{{1,3}}(?:\.\d{{3}}){{2,}})(?![.,]?\d)      # 1.234.567
      | (?P<indian>\d{{1,2}}(?:,\d{{2}})+,\d{{3}}(?:\.\d+)?)   # 12,34,567.5
      | (?P<commas>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?)           # 1,234,567.89
      | (?P<spaces>\d{{1,3}}(?:{_SPACE}\d{{3}})+(?:[.,]\d+)?)(?![\d])  # 1 234 567,5
      | (?P<apos>\d{{1,3}}(?:['’]\d{{3}})+(?:\.\d+)?)          # 1'234'567.5
      | (?P<dcomma>\d+,\d{{1,2}})(?![\d])                      # 12,5
      | (?P<plain>\d+(?:\.\d+)?|\.\d+)
    )
    (?P<exp>[eE][+-]?\d{{1,3}})?
    (?:
        (?P<pct>[\s\u202f]?%)
      | \s?(?P<word>thousand|million|billion|trillion|lakh|lakhs|crore|crores)\b
      | (?P<suffix>k|K|M|MM|B|bn|BN)\b
      | (?P<cur2>[\s\u202f]?[€£¥₹](?!\d))
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
    "trillion": 1e12,
    "lakh": 1e5,
    "lakhs": 1e5,
    "crore": 1e7,
    "crores": 1e7,
}
_COMMA_DECIMAL_EVIDENCE = re.compile(
    rf"\d{{1,3}}(?:\.\d{{3}})+,\d|(?<![\d,.])\d+,\d{{1,2}}(?![\d,])|\d{_SPACE}\d{{3}},\d"
)
_DOT_DECIMAL_EVIDENCE = re.compile(
    r"\d,\d{3}\.\d|(?<![\d,.])\d+\.(?:\d{1,2}|\d{4,})(?![\d.,])|\d{1,3}(?:,\d{3}){2,}(?![\d])"
)


@dataclass(frozen=True)
class NumberMention:
    """One number found in a text."""

    text: str
    """The characters as written (``$1,234.50``)."""
    value: float
    """The value with sign and magnitude applied (``1234.5``); a percentage keeps its digits
    (``12.5%`` -> 12.5). ``nan`` when ``ambiguous``."""
    percent: bool = False
    currency: bool = False
    """Written with a currency sign."""
    ambiguous: bool = False
    """``1,234`` / ``1.234`` / ``12,5`` whose reading the text does not decide (unparsed)."""
    start: int = 0
    """Offset of the mention in the searched text."""
    end: int = 0
    before: str = ""
    """Up to 30 characters of the text just before the mention (for context words)."""

    def readings(self) -> tuple[float, ...]:
        """The values this mention may stand for: a percentage reads as ``p`` and ``p/100``;
        an ambiguous mention has none."""
        if self.ambiguous:
            return ()
        return (self.value, self.value / 100.0) if self.percent else (self.value,)


def decimal_mark(text: str) -> str | None:
    """The text's decimal mark: ``","`` when it writes comma decimals and no dot decimals,
    ``"."`` when it writes dot decimals and no comma decimals, else ``None`` (undecided or
    mixed)."""
    cleaned = _DATE_RE.sub(" ", text)
    comma = bool(_COMMA_DECIMAL_EVIDENCE.search(cleaned))
    dot = bool(_DOT_DECIMAL_EVIDENCE.search(cleaned))
    if comma and not dot:
        return ","
    if dot and not comma:
        return "."
    return None


def _digits(match: re.Match[str], mark: str | None) -> str | None:
    """The number's digits in Python syntax, or ``None`` when ambiguous."""
    num = match.group("num")
    if match.group("eu") or match.group("dots"):
        return num.replace(".", "").replace(",", ".")
    if match.group("indian") or match.group("apos"):
        return num.replace(",", "").replace("'", "").replace("’", "")
    if match.group("commas"):
        single_group = num.count(",") == 1 and "." not in num
        if single_group and mark == ",":
            return None
        return num.replace(",", "")
    if match.group("spaces"):
        return re.sub(_SPACE, "", num).replace(",", ".")
    if match.group("dcomma"):
        return num.replace(",", ".") if mark == "," else None
    whole, _, frac = num.partition(".")
    if mark == "," and len(frac) == 3 and 1 <= len(whole) <= 3:
        return None
    return num


def find_all_numbers(text: str) -> list[NumberMention]:
    """Every number mentioned in ``text``, in order, ambiguous ones included (flagged)."""
    cleaned = _DATE_RE.sub(lambda m: " " * len(m.group(0)), text)
    mark = decimal_mark(cleaned)
    found: list[NumberMention] = []
    for match in _NUMBER_RE.finditer(cleaned):
        digits = _digits(match, mark)
        written = text[match.start() : match.end()].strip()
        lead = len(text[match.start() : match.end()]) - len(
            text[match.start() : match.end()].lstrip()
        )
        start, end = match.start() + lead, match.start() + lead + len(written)
        currency = bool(match.group("cur") or match.group("cur2"))
        percent = bool(match.group("pct"))
        before = text[max(0, start - 30) : start]
        if digits is None:
            nan = float("nan")
            found.append(NumberMention(written, nan, percent, currency, True, start, end, before))
            continue
        value = float(digits + (match.group("exp") or ""))
        word = match.group("word") or match.group("suffix")
        if word:
            value *= _MULTIPLIER[word.lower()]
        if (match.group("sign") or "") in ("-", "−") or match.group("sign2"):
            value = -value
        found.append(NumberMention(written, value, percent, currency, False, start, end, before))
    return found


def find_numbers(text: str) -> list[NumberMention]:
    """Every unambiguous number mentioned in ``text``, in order."""
    return [m for m in find_all_numbers(text) if not m.ambiguous]


def is_single_number(text: str) -> NumberMention | None:
    """The number when ``text`` is exactly one number (currency sign, %, separators allowed;
    surrounding whitespace, backticks and ``**`` emphasis ignored), else ``None``."""
    stripped = text.strip().strip("`*_ \t\n")
    numbers = find_all_numbers(stripped)
    if len(numbers) != 1 or numbers[0].text != stripped or numbers[0].ambiguous:
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
