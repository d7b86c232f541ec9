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
- currency signs before (``$1,234.50``, ``-$5``, ``$-5``, ``US$5``; ``C$``/``CA$``, ``A$``,
  ``NZ$``, ``HK$``, ``MX$``, ``S$``, ``R$`` name other dollars) or after (``12,50 €``)
  and currency codes or words (``268,405.99 EUR``, ``USD 5``, ``5 dollars``, ``108.19 US
  cents`` = 1.0819 dollars): :attr:`NumberMention.currency_code`; percentages (``12.5%`` kept
  as 12.5 and flagged), magnitude words and suffixes (``3 million``, ``1.2k``, ``2bn``,
  ``3 lakh``, ``2 crore``), powers of ten (``1.2346 × 10^6``);
- accounting signs: ``($42,350.00)`` / ``(42,350)`` (an amount alone in parentheses: a
  currency sign, grouping or decimals, so ``(2024)`` stays a year) and ``42,350.00 CR`` are
  negative; ``DR`` (debit) leaves the value positive;
- a comma followed by four or more digits is a decimal comma whatever the text
  (``1,0819`` = 1.0819: no grouping has four digits);
- numbers in words (``one point two three million``, ``four thousand eight hundred
  twenty-one``; a phrase needs a scale word, ``point`` or a hyphenated compound, so a lone
  ``one`` is not read), ``noon`` (12) and ``midnight`` (0);
- clock hours: ``12:00`` and the one-hour interval ``12:00–12:59`` are the hour 12.

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
    (?P<cur>(?:US|U\.S\.|CA|C|AU|A|NZ|HK|MX|SG|S|R)?\$|[€£¥₹])?
    (?P<sign2>[-−])?
    (?P<num>
        (?P<eu>\d{{1,3}}(?:\.\d{{3}})+,\d+)                    # 1.234,50
      | (?P<dots>\d{{1,3}}(?:\.\d{{3}}){{2,}})(?![.,]?\d)      # 1.234.567
      | (?P<indian>\d{{1,2}}(?:,\d{{2}})+,\d{{3}}(?:\.\d+)?)   # 12,34,567.5
      | (?P<dcomma4>\d+,\d{{4,}})(?![\d,])                    # 1,0819: a decimal comma
      | (?P<commas>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?)           # 1,234,567.89
      | (?P<spaces>\d{{1,3}}(?:{_SPACE}\d{{3}})+(?:[.,]\d+)?)(?![\d])  # 1 234 567,5
      | (?P<apos>\d{{1,3}}(?:['’]\d{{3}})+(?:\.\d+)?)          # 1'234'567.5
      | (?P<dcomma>\d+,\d{{1,2}})(?![\d])                      # 12,5
      | (?P<plain>\d+(?:\.\d+)?|\.\d+)
    )
    (?P<exp>[eE][+-]?\d{{1,3}})?
    (?:[ \t]?[×xX·*][ \t]?10(?:\^|\*\*)(?P<pow>[-−+]?\d{{1,3}}))?
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
    """Written with a currency sign, code or word (``$``, ``EUR``, ``dollars``)."""
    ambiguous: bool = False
    """``1,234`` / ``1.234`` / ``12,5`` whose reading the text does not decide (unparsed)."""
    start: int = 0
    """Offset of the mention in the searched text."""
    end: int = 0
    before: str = ""
    """Up to 30 characters of the text just before the mention (for context words)."""
    currency_code: str | None = None
    """The ISO code of the currency it is written in (``$`` -> ``USD``), when any."""

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
    if match.group("dcomma4"):
        return num.replace(",", ".")
    whole, _, frac = num.partition(".")
    if mark == "," and len(frac) == 3 and 1 <= len(whole) <= 3:
        return None
    return num


_SIGN_CODES = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR"}
_DOLLAR_PREFIXES = {"C": "CAD", "CA": "CAD", "A": "AUD", "AU": "AUD", "NZ": "NZD", "HK": "HKD"}
_DOLLAR_PREFIXES |= {"MX": "MXN", "S": "SGD", "SG": "SGD", "R": "BRL"}
"""Letters before ``$`` that name another dollar (``C$``, ``HK$``, ``MX$``, ``R$``...)."""
_CODE_AFTER_RE = re.compile(
    r"^[ \t\u00a0\u202f]?(?:(?P<code>USD|EUR|GBP|INR|JPY|CNY|CHF|CAD|AUD|SEK)\b"
    r"|(?P<word>(?:US |U\.S\. |Canadian )?dollars?|euros?|rupees?|kronor|krona)\b"
    r"|(?P<cents>(?:US |U\.S\. )?cents?)\b)",
)
_CODE_BEFORE_RE = re.compile(r"\b(?P<code>USD|EUR|GBP|INR|JPY|CNY|CHF|CAD|AUD|SEK)[ \t\u00a0]?$")
_WORD_CODES = {
    "dollar": "USD",
    "canadian dollar": "CAD",
    "euro": "EUR",
    "rupee": "INR",
    "kronor": "SEK",
    "krona": "SEK",
}
_LEDGER_SIGN_RE = re.compile(r"^[ \t]?(?P<side>CR|Cr|DR|Dr)\b")
_CLOCK_RE = re.compile(
    r"(?<![\w:.])(?P<h>[01]?\d|2[0-3]):00(?:[ \t]?[-–—][ \t]?(?P<h2>[01]?\d|2[0-3]):59)?(?![\w:])"
)
ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
"""Number words for 20..90 (``ONES``: 0..19); :mod:`dabench.grading.asked_form` reads both."""
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_NUMBER_WORD = "|".join([*ONES, *TENS, "hundred", *_SCALES])
_WORDS_RE = re.compile(
    rf"(?<![\w-])(?:{_NUMBER_WORD})(?:(?:[ \t]+|-|,[ \t]+|[ \t]+and[ \t]+)(?:{_NUMBER_WORD}))*"
    rf"(?:[ \t]+point(?:[ \t]+(?:{'|'.join(ONES[:10])}))+(?:[ \t]+(?:{'|'.join(_SCALES)}))?)?"
    r"(?![\w-])|(?<![\w-])(?:noon|midday|midnight)(?![\w-])",
    re.IGNORECASE,
)


def _words_value(phrase: str) -> float | None:
    """The value of a number written in words, or ``None`` when the phrase is not read (a
    lone small number word such as ``one``, which is more often a pronoun than a value)."""
    words = re.findall(r"[a-z]+", phrase.lower())
    if words in (["noon"], ["midday"]):
        return 12.0
    if words == ["midnight"]:
        return 0.0
    if words[0] in ("hundred", *_SCALES):
        return None
    if not (
        "point" in words or "-" in phrase or any(w in _SCALES or w == "hundred" for w in words)
    ):
        return None
    total, current, fraction, in_fraction = 0.0, 0.0, "", False
    for word in words:
        if word == "and":
            continue
        if word == "point":
            in_fraction = True
        elif in_fraction and word in ONES[:10]:
            fraction += str(ONES.index(word))
        elif word in ONES:
            current += ONES.index(word)
        elif word in TENS:
            current += 20 + 10 * TENS.index(word)
        elif word == "hundred":
            current *= 100
        elif word in _SCALES:
            total += (current + (float("0." + fraction) if fraction else 0.0)) * _SCALES[word]
            current, fraction, in_fraction = 0.0, "", False
    return total + current + (float("0." + fraction) if fraction else 0.0)


_RESTATED_BEFORE_RE = re.compile(r"\d[\w%]*(?:[ \t]+[A-Za-z]+)?[ \t*_]*$")
"""A number (with a unit word) right before ``(``: the parentheses restate it
(``$1.23k ($1,234.50)``), they are not an accounting sign."""


def _accounting_negative(text: str, start: int, end: int, match: re.Match[str]) -> bool:
    """``($42,350.00)`` / ``(42,350)``: an amount (currency sign, grouping or decimals)
    alone in parentheses that do not restate a number just before them, or followed by
    ``CR``."""
    ledger = _LEDGER_SIGN_RE.match(text[end:])
    if ledger is not None:
        return ledger.group("side").upper() == "CR"
    amount = match.group("cur") or not match.group("plain") or "." in match.group("num")
    opens = text[:start].rstrip(" \t*_")
    closes = text[end:].lstrip(" \t*_")
    if not (amount and opens.endswith("(") and closes.startswith(")")):
        return False
    line = opens[:-1].rsplit("\n", 1)[-1]
    return not _RESTATED_BEFORE_RE.search(line)


def _currency_code(text: str, start: int, end: int, sign: str | None) -> tuple[str | None, bool]:
    """The currency a mention is written in (ISO code) and whether it is in cents."""
    after = _CODE_AFTER_RE.match(text[end:])
    if sign:
        if sign[:-1] in _DOLLAR_PREFIXES:  # C$ / CA$ / HK$ / MX$...: another dollar
            return _DOLLAR_PREFIXES[sign[:-1]], False
        if sign == "$" and after is not None and after.group("code"):
            return after.group("code"), False  # "$25,331.43 CAD": the code names the dollar
        return _SIGN_CODES[sign[-1]], False
    if after is not None:
        if after.group("code"):
            return after.group("code"), False
        if after.group("word"):
            phrase = after.group("word").lower()
            for key in (phrase, phrase.removesuffix("s"), phrase.split()[-1].removesuffix("s")):
                if key in _WORD_CODES:
                    return _WORD_CODES[key], False
            return "USD", False
        return "USD", True
    before = _CODE_BEFORE_RE.search(text[max(0, start - 5) : start])
    return (before.group("code"), False) if before else (None, False)


def _spoken(text: str) -> list[NumberMention]:
    """Numbers written in words and clock hours (see the module docstring)."""
    found: list[NumberMention] = []
    for match in _CLOCK_RE.finditer(text):
        if match.group("h2") is not None and match.group("h2") != match.group("h"):
            continue
        start, end = match.span()
        found.append(
            NumberMention(
                match.group(0),
                float(match.group("h")),
                start=start,
                end=end,
                before=text[max(0, start - 30) : start],
            )
        )
    for match in _WORDS_RE.finditer(text):
        phrase = match.group(0).rstrip(" ,")
        value = _words_value(phrase)
        if value is None:
            continue
        start = match.start()
        end = start + len(phrase)
        code, cents = _currency_code(text, start, end, None)
        percent = bool(re.match(r"^[ \t]+percent\b", text[end:]))
        found.append(
            NumberMention(
                phrase,
                value / 100.0 if cents else value,
                percent,
                code is not None,
                False,
                start,
                end,
                text[max(0, start - 30) : start],
                code,
            )
        )
    return found


def find_all_numbers(text: str) -> list[NumberMention]:
    """Every number mentioned in ``text``, in order, ambiguous ones included (flagged)."""
    cleaned = _DATE_RE.sub(lambda m: " " * len(m.group(0)), text)
    mark = decimal_mark(cleaned)
    spoken = _spoken(cleaned)
    for mention in spoken:
        cleaned = (
            cleaned[: mention.start] + " " * (mention.end - mention.start) + cleaned[mention.end :]
        )
    found: list[NumberMention] = list(spoken)
    for match in _NUMBER_RE.finditer(cleaned):
        digits = _digits(match, mark)
        written = text[match.start() : match.end()].strip()
        lead = len(text[match.start() : match.end()]) - len(
            text[match.start() : match.end()].lstrip()
        )
        start, end = match.start() + lead, match.start() + lead + len(written)
        sign = match.group("cur") or match.group("cur2")
        code, cents = _currency_code(text, start, end, sign.strip() if sign else None)
        percent = bool(match.group("pct"))
        before = text[max(0, start - 30) : start]
        if digits is None:
            nan = float("nan")
            found.append(
                NumberMention(
                    written, nan, percent, code is not None, True, start, end, before, code
                )
            )
            continue
        value = float(digits + (match.group("exp") or ""))
        if match.group("pow"):
            value *= 10.0 ** int(match.group("pow").replace("−", "-"))
        word = match.group("word") or match.group("suffix")
        if word:
            value *= _MULTIPLIER[word.lower()]
        if (
            (match.group("sign") or "") in ("-", "−")
            or match.group("sign2")
            or (not percent and _accounting_negative(text, start, end, match))
        ):
            value = -value
        if cents:
            value /= 100.0
        found.append(
            NumberMention(
                written, value, percent, code is not None, False, start, end, before, code
            )
        )
    return sorted(found, key=lambda m: m.start)


def find_numbers(text: str) -> list[NumberMention]:
    """Every unambiguous number mentioned in ``text``, in order."""
    return [m for m in find_all_numbers(text) if not m.ambiguous]


def is_single_number(text: str) -> NumberMention | None:
    """The number when ``text`` is exactly one number written in digits (currency sign, %,
    separators allowed; surrounding whitespace, backticks and ``**`` emphasis ignored; a
    number in words or a clock time is not one), else ``None``."""
    stripped = text.strip().strip("`*_ \t\n")
    numbers = find_all_numbers(stripped)
    if len(numbers) != 1 or numbers[0].text != stripped or numbers[0].ambiguous:
        return None
    if not any(c.isdigit() for c in stripped) or ":" in stripped:
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
