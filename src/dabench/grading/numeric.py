"""The numeric grader: the answer's committed number against the truth, with absolute and
relative tolerance.

Rules (docs/grading.md, "Numeric", which lists the words each rule uses):

0. **Declined**: a committed statement that opens by declining ("cannot be answered",
   "declined") fails, whatever numbers it gives as examples.
1. **Committed statement** (:func:`dabench.grading.answer.commitment`): the final-answer
   line, else the first line under an answer heading, else the concluding sentence. Numbers
   elsewhere (reasoning, intermediate figures, SQL) are never graded. It must state a number
   within tolerance of the truth; counts of rows/columns/tables are never the answer.
2. **Denied value**: the truth right after ``not`` / ``instead of``... fails.
3. **Known-wrong value**: the trap's naive answer (outside the truth's tolerance) in the
   committed statement or the sentences after it fails.
4. **Intermediate figure**: when the sentence marks a value (bold, else the last one after a
   copula such as ``is`` / ``=`` / ``:`` / ``dropped to``) of the truth's kind, that value
   must be the truth.
5. **Comparison** (``versus``, ``compared with``...) with another value of the truth's kind
   fails.
6. **Several values**: unless the truth is bold, another value of its kind in the sentence
   fails, except in parentheses, after a reference word (``from``, ``than``, ``of``...) or a
   negation, before a ``but`` that precedes the truth, year-like integers and shorthand
   restatements (:func:`restates`).
7. **Hedge**: another value of the truth's kind joined by a range or slash, or in a
   sentence (the committed one or one after it) with a hedge word (:data:`HEDGE_WORDS`).
8. **Asked form** (:func:`asked_form`, :func:`normalised`): month names, ``8 PM``, direction
   words, other time units, basis points and lone number words are read as the question
   asks; a percentage is not a count. Then bounds, declared guesses, corrections after the
   answer and a part of another value (``164 of them``) fail.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from dabench.grading.answer import Commitment, commitment
from dabench.grading.asked_form import AskedForm, asked_form, normalised, words_read
from dabench.grading.direction import mixed_direction
from dabench.grading.later_values import Candidate, later_rival, self_corrected, subtotal
from dabench.grading.numbers import NumberMention, find_all_numbers, format_number
from dabench.journal.records import GradeCheck

HEDGE_WORDS: tuple[str, ...] = (
    "or",
    "either",
    "between",
    "alternatively",
    "alternative",
    "possibly",
    "perhaps",
    "maybe",
    "might",
    "could",
    "would",
    "otherwise",
    "somewhere",
    "ranging",
    "range",
    "if",
    "unless",
    "depending",
    "depends",
    "possible",
    "ambiguous",
    "unclear",
    "uncertain",
    "probably",
    "likely",
    "actually",
    "instead",
    "correction",
    "corrected",
    "rather",
    "after",
)
"""Words that make a second candidate value a hedge."""
_CONDITIONAL = {"if", "unless", "depending"}
_DECLINE_RE = re.compile(
    r"^[\W_]*(?:(?:i |we )?declined?\b"
    r"|(?:it |this |that |the question )?(?:cannot|can ?not|can't|could not|couldn't) be"
    r" (?:answered|determined|computed|calculated)\b"
    r"|(?:i |we )?(?:cannot|can't|could not|couldn't) (?:answer|determine|compute|calculate)\b"
    r"|(?:not (?:answerable|determinable)|unanswerable|undeterminable)\b)",
    re.IGNORECASE,
)
"""A committed statement that opens by declining to answer (rule 0 of the module)."""
_WORD_RE = re.compile(r"[A-Za-z]+")
_WORDY_RE = re.compile(r"[^\W_]")
_RANGE_RE = re.compile(r"[ \t]?[-–/][ \t]?")


def tolerance(expected: float, tolerance_abs: float, tolerance_rel: float) -> float:
    """The allowed absolute difference: ``max(tolerance_abs, tolerance_rel * |expected|)``."""
    return max(tolerance_abs, tolerance_rel * abs(expected))


def within(found: float, expected: float, tolerance_abs: float, tolerance_rel: float) -> bool:
    """True when ``found`` is within tolerance of ``expected`` (see :func:`tolerance`)."""
    return abs(found - expected) <= tolerance(expected, tolerance_abs, tolerance_rel) + 1e-12


def asked_decimals(tolerance_abs: float, tolerance_rel: float) -> int | None:
    """The decimal places a question asks for, read off a tolerance of half a unit of the
    last one (abs 0.5 -> 0, 0.05 -> 1, 0.005 -> 2, ...; ``None`` with a relative tolerance or
    any other absolute one). An answer is reported at this precision, so a careless reading
    passes when its *rounded* value is within the tolerance."""
    if tolerance_rel or tolerance_abs <= 0:
        return None
    for places in range(10):
        if math.isclose(tolerance_abs, 0.5 * 10**-places, rel_tol=1e-9):
            return places
    return None


def _hits(mention: NumberMention, target: float, tol_abs: float, tol_rel: float) -> bool:
    return any(within(v, target, tol_abs, tol_rel) for v in mention.readings())


_CLOCK_RE = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
"""A time of day, ``HH:MM`` (hour and minutes as groups)."""
_CLOCK_AFTER_RE = re.compile(r":[0-5]\d(?!\d)")
_CLOCK_BEFORE_RE = re.compile(r"(?<!\d)(?:[01]?\d|2[0-3]):$")


def _clock_minutes(text: str, mention: NumberMention) -> bool:
    """The minutes of a time of day (``59`` of ``22:59``): never a committed value."""
    return mention.text.isdigit() and bool(
        _CLOCK_BEFORE_RE.search(text[max(0, mention.start - 3) : mention.start])
    )


def _clock_time(text: str, mention: NumberMention) -> bool:
    """A part of a time of day (``18:00``, the ``22`` or ``59`` of ``22:59``: a window the
    question sets, say), never the answer or a rival quantity."""
    if mention.percent or mention.currency:
        return False
    if _CLOCK_RE.fullmatch(mention.text):
        return True
    return _clock_minutes(text, mention) or (
        mention.text.isdigit() and bool(_CLOCK_AFTER_RE.match(text, mention.end))
    )


def question_numbers(question: str) -> frozenset[float]:
    """The plain numbers a question states (the hours of its times of day included): an
    answer that restates one (``hours 18-22`` for "between 18:00 and 22:59") restates a
    parameter."""
    found = {m.value for m in find_all_numbers(question) if not m.ambiguous}
    for clock in _CLOCK_RE.finditer(question):
        found.update((float(clock.group(1)), float(clock.group(2))))
    return frozenset(found)


def _year_like(mention: NumberMention) -> bool:
    return (
        not mention.percent
        and not mention.currency
        and mention.text.isdigit()
        and 1900 <= mention.value <= 2100
    )


_MAGNITUDE_RE = re.compile(
    r"\d\s?(?P<word>k|thousand|mm|m|million|bn|b|billion|lakh|crore)\b", re.IGNORECASE
)
_MAGNITUDE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mm": 1e6, "million": 1e6}
_MAGNITUDE |= {"b": 1e9, "bn": 1e9, "billion": 1e9, "lakh": 1e5, "crore": 1e7}


_APPROX_BEFORE_RE = re.compile(
    r"(?:\babout|\baround|\broughly|\bapproximately|\bapprox\.|~|≈|\bi\.e\.|\bor so)[ \t*_]*$",
    re.IGNORECASE,
)


def _context_before(mention: NumberMention) -> str:
    return mention.before[-25:]


def restates(other: NumberMention, hit: NumberMention) -> bool:
    """True when ``other`` is shorthand (a magnitude suffix or word, or after ``about``,
    ``~``, ``≈``, ``i.e.``) for ``hit``'s value rounded to ``other``'s written precision
    (``$1.23k`` restates ``$1,234.50``; ``$1,240.10`` and ``4 days`` for 3.5 do not)."""
    shorthand = _MAGNITUDE_RE.search(other.text) or _APPROX_BEFORE_RE.search(_context_before(other))
    if not shorthand:
        return False
    digits = re.sub(r"[^\d.,]", "", other.text)
    tail = re.search(r"[.,](\d{1,2})$", digits)
    decimals = len(tail.group(1)) if tail else 0
    magnitude = _MAGNITUDE_RE.search(other.text)
    step = (_MAGNITUDE[magnitude.group("word").lower()] if magnitude else 1.0) * 10.0**-decimals
    return any(
        abs(math.floor(v / step + 0.5) * step - other.value) <= step * 1e-6 for v in hit.readings()
    )


def _hedge_words(sentence: str, after: int | None) -> list[str]:
    """Hedge words in ``sentence``; conditional ones only from offset ``after`` on."""
    words: list[str] = []
    for match in _WORD_RE.finditer(sentence):
        word = match.group(0).lower()
        if word not in HEDGE_WORDS:
            continue
        if word in _CONDITIONAL and after is not None and match.start() < after:
            continue
        words.append(word)
    return words


_BOLD_RE = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_COPULA_BEFORE_RE = re.compile(
    r"(?:(?<!which )(?<!that )\b(?:is|are|was|were|equals|totals?|totall?ed|comes to|came to"
    r"|amounts to|amounted to|gives|yields|leaves|becomes|reached|reaches|stands at|stood at"
    r"|(?:rose|fell|dropped|grew|increased|decreased|declined|climbed|jumped|went up|went down"
    r"|changed|corrected|revised|adjusted|updated) to)|(?<=\w)(?<!year)(?<!quarter)(?<!month)"
    r"(?<!week)(?<!period)(?<!day)(?<!yesterday)(?<!today)['’]s|=|:|→|≈)"
    r"[ \t*_]*(?:approximately|about|around|roughly|exactly|just|only|~)?[ \t*_~]*$",
    re.IGNORECASE,
)


_META_COUNT_RE = re.compile(
    r"^[ \t]+(?:rows?|records?|lines?|columns?|tables?|results?|quer(?:y|ies)|(?:tool )?calls?)\b",
    re.IGNORECASE,
)
_COMPARISON_RE = re.compile(
    r"\b(?:compared (?:with|to)|versus|vs\.?|against|relative to|in contrast to)\b", re.IGNORECASE
)


_REFERENCE_BEFORE_RE = re.compile(
    r"(?:\bfrom|\bthan|\bsince|\bpreviously|\bprior|\bbefore|\bout of|(?<!total )(?<!sum )\bof"
    r"|\bacross|\bover"
    r"|\bvs\.?|\bversus|\bcompared (?:with|to)|\bnot|n't|\binstead of|\brather than"
    r"|\b(?:last|prior|previous) (?:year|quarter|month|week|period)(?:['’]s(?: figure| total"
    r"| value)?)?|\b(?:yesterday|today)['’]s|\bin (?:q[1-4]|[a-z]+ \d{4})|\bwhich (?:is|was)"
    r"|\bthat is|\bi\.e\.|\b(?:difference|change|gap|increase|decrease|drop|rise) of"
    r"|\b(?:out of|of|among|across|from) (?:the|those|these|all)|^[ \t*_]*(?:those|these))"
    r"[ \t*_$€£¥₹~≈]*$",
    re.IGNORECASE,
)


_CONTRAST_RE = re.compile(
    r"\b(?:but|however|although|though|actually|correction|corrected|instead)\b", re.IGNORECASE
)


def _bold_spans(sentence: str) -> list[re.Match[str]]:
    """The bold spans that emphasise a part of ``sentence``: a span holding the whole
    sentence (nothing but marks outside it) emphasises no one value."""
    spans = list(_BOLD_RE.finditer(sentence))
    whole = [b for b in spans if not _WORDY_RE.search(sentence[: b.start()] + sentence[b.end() :])]
    return [] if whole and _WORD_RE.search(whole[0].group(0)[2:-2].split(" ", 1)[-1]) else spans


def _in_bold(sentence: str, mention: NumberMention) -> bool:
    return any(b.start() <= mention.start and mention.end <= b.end() for b in _bold_spans(sentence))


def _outside_parentheses(text: str) -> list[bool]:
    """Per character of ``text``: True when it is not inside ``(...)``."""
    depth, out = 0, []
    for char in text:
        if char == "(":
            depth += 1
        out.append(depth == 0)
        if char == ")" and depth:
            depth -= 1
    return out


def _meta_count(sentence: str, mention: NumberMention) -> bool:
    """``1,234 rows``: a count of query results or schema objects, never the answer."""
    return bool(_META_COUNT_RE.match(sentence[mention.end :]))


_CENTS_RE = re.compile(r"\d[.,]\d{2}$")


def _same_kind(a: NumberMention, b: NumberMention, money: bool = False) -> bool:
    """Both or neither a percentage, both or neither with a currency, and the same currency
    when both name one (``€248,087.43`` beside ``$268,405.99`` is a conversion, not a rival).
    With ``money`` (the question asks an amount: :func:`asked_form`), a bare number written
    to the cent (``37,430.20``) is of the kind of a currency amount."""
    codes = {a.currency_code, b.currency_code} - {None}
    if a.percent != b.percent or len(codes) > 1:
        return False
    if a.currency == b.currency:
        return True
    return money and all(m.currency or _CENTS_RE.search(m.text) for m in (a, b))


_NEGATED_RE = re.compile(
    r"(?:\bnot|\bcannot|n't|\bnever|\binstead of|\brather than|\bnor|\bexcept)[ \t*_]*"
    r"(?:(?:exactly|quite|just|simply|really|the|a|an|be|equal|equals|to)[ \t*_]+)*[ \t*_]*$",
    re.IGNORECASE,
)


_WRONG_AFTER_RE = re.compile(
    r"^[^;.—–()\d]{0,60}?\b(?:is|are|was|were|seems|looks)[ \t]+(?:wrong|incorrect|inaccurate"
    r"|invalid|stale|outdated|not (?:right|correct|accurate)|a mistake)\b",
    re.IGNORECASE,
)
"""After a number, in its clause and before any other number: ``12 is incorrect``, ``the
figure of 12 from the catalogue view is wrong``."""


def negated(sentence: str, mention: NumberMention) -> bool:
    """True when ``mention`` is denied in ``sentence`` (``not $1,234.50``, ``instead of``,
    ``cannot be 12``, ``not equal to 164``, ``12 is incorrect``)."""
    return bool(_NEGATED_RE.search(sentence[: mention.start][-30:])) or bool(
        _WRONG_AFTER_RE.match(sentence[mention.end :])
    )


def committed_value(sentence: str, hit: NumberMention, money: bool = False) -> NumberMention | None:
    """The value ``sentence`` commits to, of the same kind as ``hit`` (the truth), or ``None``
    when the sentence marks none.

    Among the numbers of the same kind as ``hit`` (shorthand restating ``hit`` left out, and
    numbers in parentheses when ``hit`` is outside them: an aside is not the answer): when
    the sentence bolds numbers, the last bolded one is committed; else when numbers follow a
    copula (``is``, ``was``, ``=``, ``:``, ``totals``, ``gives``...; not ``which is``), the
    last such one; else any.
    """
    outside = _outside_parentheses(sentence)
    mentions = [
        m
        for m in find_all_numbers(sentence)
        if not m.ambiguous
        and _same_kind(m, hit, money)
        and (m.start == hit.start or not restates(m, hit))
        and (outside[m.start] or not outside[hit.start])
        and (m.start == hit.start or not _clock_minutes(sentence, m))
    ]
    bold = [
        m
        for b in _bold_spans(sentence)
        for m in mentions
        if b.start() <= m.start and m.end <= b.end() and (_year_like(hit) or not _year_like(m))
    ]
    if bold:
        last = bold[-1]
    else:
        bound = [m for m in mentions if _COPULA_BEFORE_RE.search(sentence[: m.start][-40:])]
        if not bound:
            return None
        last = bound[-1]
    return last


def find_hedge(
    statement: Commitment,
    hit: NumberMention,
    expected: float,
    tol_abs: float,
    tol_rel: float,
    asked: frozenset[float] = frozenset(),
    money: bool = False,
) -> str | None:
    """Why ``statement`` hedges between ``hit`` (the truth) and another value, or ``None``;
    a time of day the question states (``asked``: :func:`question_numbers`) is no rival.
    A sentence after the committed one (or in a skipped trailing note) that states another
    value with a word of correction (:data:`_CORRECTION_RE`) corrects the answer."""
    truth_is_year = 1900 <= expected <= 2100 and expected == int(expected)

    def competitors(text: str) -> list[NumberMention]:
        return [
            m
            for m in find_all_numbers(text)
            if not m.ambiguous
            and _same_kind(m, hit, money)
            and not math.isclose(m.value, hit.value, rel_tol=1e-9, abs_tol=1e-12)
            and not restates(m, hit)
            and not _REFERENCE_BEFORE_RE.search(m.before)
            and (truth_is_year or not _year_like(m))
            and not (_clock_time(text, m) and m.value in asked)
        ]

    sentences = [
        (statement.sentence, "committed"),
        *((s, "following") for s in statement.following),
        *((s, "later") for s in statement.later),
    ]
    for text, place in sentences:
        others = competitors(text)
        if not others:
            continue
        correction = _CORRECTION_RE.search(text) if place != "committed" else None
        if correction is not None:
            values = ", ".join(m.text for m in others)
            return f"a later sentence corrects it to {values} ({correction.group(0)!r})"
        if place == "later":
            continue
        if place == "committed":
            first = min([hit.start, *(m.start for m in others)])
            for other in others:
                lo, hi = sorted((hit, other), key=lambda m: m.start)
                clock = _CLOCK_AFTER_RE.match(text, lo.end)  # 12:00–13:59: a range of hours
                if _RANGE_RE.fullmatch(text[clock.end() if clock else lo.end : hi.start]):
                    return f"a range {lo.text}-{hi.text}"
            words = _hedge_words(text, first)
        else:
            words = _hedge_words(text, None)
        if words:
            values = ", ".join(m.text for m in others)
            return f"another candidate value {values} with {words[0]!r}"
    return None


_READING_RE = re.compile(
    r"\b(?:fiscal|calendar|gross|net|reading|basis|definition|interpretation|convention"
    r"|column|field|view|source)\b",
    re.IGNORECASE,
)
_TREATMENT_RE = re.compile(
    r"\b(?:includ\w*|exclud\w*|count(?:ed|ing)?|duplicat\w*|de-?dup\w*|raw|unfiltered"
    r"|filter\w*|remov\w*|subtract\w*|deduct\w*|refunds?|discounts?|shipping|cents"
    r"|convert\w*|conversion|test accounts?|erased|deleted|deprecated|legacy|utc|local time"
    r"|time ?zones?|cancel+ed|returned|status\w*)\b",
    re.IGNORECASE,
)
"""Words that name how the data is treated (which rows count, which corrections apply): a
conditional clause with one of them states what another treatment would give."""
_UNCORRECTED_RE = re.compile(
    r"\b(?:raw|unfiltered|uncleaned|uncorrected|unadjusted|naive|including|included|before"
    r"|removed|excluded|dropped|filtered out"
    r"|with(?:out)? (?:the )?(?:duplicates|test accounts|refunds|discounts|conversion))\b",
    re.IGNORECASE,
)
"""In parentheses after the truth, a label that calls another value the uncorrected one:
``(1,169 raw rows)``, ``(330 including test accounts)``, ``(1,300 before refunds)``."""
_DOUBT_RE = re.compile(
    r"\b(?:wrong|mistak\w*|errors?|erroneous|incorrect\w*|misread|doubt\w*|check|verify"
    r"|confirm\w*|assum\w*|guess\w*)\b",
    re.IGNORECASE,
)
"""In a clause with another value, words of self-doubt (``330 if I got the filter wrong``):
the value is then a second answer, not a caveat."""
_CONDITIONAL_MARK_RE = re.compile(
    r"\b(?:would(?: have)? be(?:en)?|would (?:give|total|come to|show|yield|say|count|return)"
    r"|if|under (?:the|a|an)"
    r"|on an? [\w-]+ basis)\b",
    re.IGNORECASE,
)
_UNSURE_RE = re.compile(
    r"\b(?:or|either|between|might|may|could|maybe|perhaps|possibly|probably|likely|unsure"
    r"|unclear|uncertain|ambiguous|not sure|depending|depends|ranging|range|alternatively"
    r"|otherwise)\b|/",
    re.IGNORECASE,
)
_ENDORSE_RE = re.compile(
    r"\b(?:correct|right|answer|prefer\w*|recommend\w*|better|actual|true|real|instead|rather"
    r"|should|use|official|intended|meant to|go with|pick|choose|report|but|however|though"
    r"|although)\b",
    re.IGNORECASE,
)
_USES_RE = re.compile(r"\b(?:uses|used|using)\b", re.IGNORECASE)
_UNLESS_IF_RE = re.compile(r"\b(?:if|whether|unless)\b", re.IGNORECASE)


def _asserts_use(clause: str) -> bool:
    """``under the fiscal definition the board uses``: the clause says which reading is in
    use (the naive one is then the wanted one); ``if the board uses ...`` only supposes it."""
    uses = _USES_RE.search(clause)
    return uses is not None and not _UNLESS_IF_RE.search(clause[: uses.start()])


_RELATIVE_RE = re.compile(r"\b(?:which|that|who)\b", re.IGNORECASE)
_AFTER_NAIVE_RE = re.compile(r"\b(?:and|but|which|that|this|is|are|was|were)\b", re.IGNORECASE)
_CONDITIONAL_WORD_RE = re.compile(r"\b(?:if|would|unless|depending|depends)\b", re.IGNORECASE)


def _clause_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The clause holding ``text[start:end]``: bounded by ``;``, an em dash, a spaced en dash
    or the parentheses enclosing it (parentheses inside the clause stay in it)."""

    def edge(i: int) -> bool:
        char = text[i]
        spaced = 0 < i < len(text) - 1 and text[i - 1] == " " and text[i + 1] == " "
        return char in ";—" or (char == "–" and spaced)

    lo, depth = start, 0
    while lo > 0:
        char = text[lo - 1]
        if char == ")":
            depth += 1
        elif char == "(" and depth:
            depth -= 1
        elif (char == "(" or edge(lo - 1)) and not depth:
            break
        lo -= 1
    hi, depth = end, 0
    while hi < len(text):
        char = text[hi]
        if char == "(":
            depth += 1
        elif char == ")" and depth:
            depth -= 1
        elif (char == ")" or edge(hi)) and not depth:
            break
        hi += 1
    return lo, hi


def _caveat_clause(text: str, lo: int, hi: int, mention: NumberMention) -> bool:
    """Whether ``text[lo:hi]``, the clause of ``mention`` (a value other than the truth),
    states what another reading or treatment of the data would give: conditional (``if``,
    ``would be``...) and naming the reading or the treatment (``fiscal``, ``gross``,
    ``included``, ``duplicates``...), or in parentheses and labelling the value as the
    uncorrected one (``raw``, ``including``, ``before``...); and holding no other value of its
    kind, no unsure, endorsing or relative word, and nothing like ``and``/``is`` after it."""
    clause = text[lo:hi]
    mark = _CONDITIONAL_MARK_RE.search(text, mention.end, hi)
    conditional = bool(_CONDITIONAL_MARK_RE.search(clause)) and bool(
        _READING_RE.search(clause) or _TREATMENT_RE.search(clause)
    )
    in_parens = lo > 0 and text[lo - 1] == "(" and hi < len(text) and text[hi] == ")"
    labelled = in_parens and bool(_UNCORRECTED_RE.search(clause))
    if not (conditional or labelled):
        return False
    # after the value, up to the condition ("330 if they were included": the verbs of the
    # condition are the condition's), no "and"/"is"/"but"... that would make it a claim
    after = text[mention.end : mark.start() if conditional and mark is not None else hi]
    kin = [
        m
        for m in find_all_numbers(clause)
        if m.start != mention.start - lo and _same_kind(m, mention) and not _year_like(m)
    ]
    return not (
        kin
        or _UNSURE_RE.search(clause)
        or _ENDORSE_RE.search(clause)
        or _asserts_use(clause)
        or _RELATIVE_RE.search(clause)
        or _DOUBT_RE.search(clause)
        or _AFTER_NAIVE_RE.search(after)
    )


def blank_caveats(statement: Commitment, hit: NumberMention) -> Commitment:
    """``statement`` with the caveat clauses (:func:`_caveat_clause`) that follow the truth
    ``hit`` and state another value of its kind blanked out, so "287 orders (330 if test
    accounts were included)" or "1,033 page views (1,169 raw rows)" commit to the truth
    alone. Nothing is blanked when, once they are, the rest still holds an unsure or
    conditional word, or (after the truth) an endorsing or contrasting one: the value may then
    be a rival, and the other rules judge the statement whole."""
    blanked: list[str] = []
    changed = False
    for index, text in enumerate((statement.sentence, *statement.following)):
        chars = list(text)
        for mention in find_all_numbers(text):
            if mention.ambiguous or not _same_kind(mention, hit) or _year_like(mention):
                continue
            if math.isclose(mention.value, hit.value, rel_tol=1e-9, abs_tol=1e-12):
                continue
            if index == 0 and mention.start < hit.end:
                continue
            lo, hi = _clause_around(text, mention.start, mention.end)
            if (index == 0 and lo < hit.end) or not _caveat_clause(text, lo, hi, mention):
                continue
            chars[lo:hi] = " " * (hi - lo)
            changed = True
        blanked.append("".join(chars))
    if not changed:
        return statement
    for index, rest in enumerate(blanked):
        if _UNSURE_RE.search(rest) or _CONDITIONAL_WORD_RE.search(rest):
            return statement
        if _ENDORSE_RE.search(rest[hit.end :] if index == 0 else rest):
            return statement
    return replace(statement, sentence=blanked[0], following=tuple(blanked[1:]))


def alternative_reading(
    statement: Commitment, hit: NumberMention, naive: float, tol_abs: float, tol_rel: float
) -> Commitment | None:
    """``statement`` with its alternative-reading clauses blanked out, or ``None`` when the
    known-wrong (naive) value appears in it otherwise.

    The naive value is a caveat, not a hedge, only when every mention of it (in the
    committed sentence, after the truth ``hit``, or in a following sentence) sits in its own
    clause (:func:`_clause_around`; not the truth's) that is conditional (``would be``,
    ``if``, ``under the``, ``on a ... basis``), names the reading (``fiscal``, ``calendar``,
    ``gross``, ``net``, ``reading``, ``basis``, ``definition``...), holds no other value of
    its kind, no unsure word (:data:`_UNSURE_RE`: ``or``, ``either``, ``between``,
    ``might``, ``/``...), no endorsing word (``correct``, ``should``, ``use``, ``instead``...),
    no ``which``/``that``/``who``, and after the naive value no ``and``/``but``/``is``...;
    and the text left
    once those clauses are blanked has no unsure or conditional word, nor (after the truth)
    an endorsing or contrasting one (``but``, ``report``, ``go with``...). ``X or Y``,
    ``X / Y``, ``between X and Y`` and the naive value first never qualify.
    """
    blanked: list[str] = []
    seen = False
    for index, text in enumerate((statement.sentence, *statement.following)):
        chars = list(text)
        for mention in find_all_numbers(text):
            if not _hits(mention, naive, tol_abs, tol_rel):
                continue
            seen = True
            if index == 0 and mention.start < hit.end:
                return None
            lo, hi = _clause_around(text, mention.start, mention.end)
            clause = text[lo:hi]
            if (index == 0 and lo < hit.end) or not (
                _CONDITIONAL_MARK_RE.search(clause) and _READING_RE.search(clause)
            ):
                return None
            kin = [
                m
                for m in find_all_numbers(clause)
                if m.start != mention.start - lo and _same_kind(m, mention) and not _year_like(m)
            ]
            after = text[mention.end : hi]
            if (
                kin
                or _UNSURE_RE.search(clause)
                or _ENDORSE_RE.search(clause)
                or _asserts_use(clause)
                or _RELATIVE_RE.search(clause)
            ):
                return None
            if _AFTER_NAIVE_RE.search(after):
                return None
            chars[lo:hi] = " " * (hi - lo)
        rest = "".join(chars)
        if _UNSURE_RE.search(rest) or _CONDITIONAL_WORD_RE.search(rest):
            return None
        if seen and _ENDORSE_RE.search(rest[hit.end :] if index == 0 else rest):
            return None
        blanked.append(rest)
    if not seen:
        return statement
    return replace(statement, sentence=blanked[0], following=tuple(blanked[1:]))


_ASKED_CURRENCY_RE = (
    (r"\b(?:in|as) (?:US |U\.S\. |American )?dollars\b", "USD"),
    (r"\b(?:in|as) Canadian dollars\b", "CAD"),
    (r"\b(?:in|as) euros?\b", "EUR"),
    (r"\b(?:in|as) (?:pounds sterling|British pounds)\b", "GBP"),
    (r"\b(?:in|as) (?:Indian )?rupees\b", "INR"),
    (r"\b(?:in|as) (?:Japanese )?yen\b", "JPY"),
    (r"\b(?:in|as) (?:Swedish )?(?:kronor|krona)\b", "SEK"),
    *(
        (rf"(?:\b(?:in|as) |\()(?:{code})\b", code)
        for code in ("USD", "CAD", "EUR", "GBP", "INR", "JPY", "SEK")
    ),
)
_OTHER_DOLLARS = frozenset({"CAD", "AUD"})
"""Asked currencies whose amounts are also written with a bare ``$`` (``$25,331.43`` for a
question asked in Canadian dollars)."""
WORLD_CURRENCY = "USD"
"""The currency the reference world keeps its amounts in."""


def asked_currency(question: str) -> str | None:
    """The currency a question asks its amount in (``in US dollars``, ``in USD``, ``(EUR)``),
    or ``None`` when it names none or several (a rate such as ``US dollars per euro`` names
    none: the currency is not preceded by ``in``, ``as`` or ``(``)."""
    found = {code for pattern, code in _ASKED_CURRENCY_RE if re.search(pattern, question, re.I)}
    return found.pop() if len(found) == 1 else None


def _in_form(statement: Commitment, form: AskedForm) -> Commitment:
    """``statement`` with every sentence :func:`normalised` and lone number words read in
    the committed one."""
    return replace(
        statement,
        sentence=words_read(normalised(statement.sentence, form)),
        following=tuple(normalised(s, form) for s in statement.following),
        preceding=tuple(normalised(s, form) for s in statement.preceding),
        later=tuple(normalised(s, form) for s in statement.later),
    )


def _reads_as(
    mention: NumberMention, expected: float, tols: tuple[float, float], form: AskedForm
) -> bool:
    """``_hits`` in the asked form: for a percentage ``405%`` reads as 405 only, and for a
    count a percentage is never the answer."""
    if mention.percent and form.count:
        return False
    if mention.percent and form.percent:
        return not mention.ambiguous and within(mention.value, expected, *tols)
    return _hits(mention, expected, *tols)


_BOUND_BEFORE_RE = re.compile(
    r"(?:\bat (?:least|most)|\b(?:more|less|fewer|greater|lower|higher) than|\bup to"
    r"|\bno (?:more|fewer|less) than|\bupwards of|\bin excess of|[<>≤≥]=?)[ \t*_~]*$",
    re.IGNORECASE,
)
_BOUND_AFTER_RE = re.compile(
    r"^[ \t*_]*\(?[ \t]*(?:±|\+/-|\+-|plus or minus\b)|^\+(?!\d)|^[ \t]+or (?:more|fewer|less)\b",
    re.IGNORECASE,
)
_APPROXIMATE_RE = re.compile(
    r"\bsomewhere\b|\bballpark\b|\bgive or take\b|\bin the (?:low |mid |high )?\d+0s\b",
    re.IGNORECASE,
)
_GUESS_RE = re.compile(
    r"\b(?:guess\w*|don['’]?t know|do not know|no idea|not sure|unsure|maybe|perhaps"
    r"|(?:can['’]?t|cannot|could not|couldn['’]?t) give (?:a |an |you )?(?:reliable|definitive"
    r"|exact|accurate|firm)"
    r"|(?:unable to|couldn['’]?t|could not|cannot|can['’]?t) (?:query|access|connect|run|reach"
    r"|verify|check)\b)",
    re.IGNORECASE,
)
_SUBSET_AFTER_RE = re.compile(r"^[ \t]+of[ \t]+(?:them|these|those|which)\b", re.IGNORECASE)
_CORRECTION_RE = re.compile(
    r"\b(?:correct(?:ed|ion)?|true|real|actual|wait|scratch|hmm|oops|mistake|wrong|incorrect"
    r"|miscounted|double-counted|recount\w*|revised|should be|to use|edit(?:ed)?|update[ds]?"
    r"|forgot|missed|on reflection|is right|to report|make that|re-?ran|instead(?! of))\b",
    re.IGNORECASE,
)
"""In a sentence after the committed one, with another value of the truth's kind: the answer
is corrected (``Wait, ... The correct count is 10.``)."""


def _unsure_single(sentence: str, hit: NumberMention) -> str | None:
    """Why the committed ``sentence`` does not commit to ``hit`` although it states no other
    value: a bound (``at least 12``, ``164 (± 10)``) or a declared guess (``If I had to
    guess, 12``, ``I'm not sure - maybe 164``); else ``None``."""
    if _BOUND_BEFORE_RE.search(sentence[: hit.start][-30:]) or _BOUND_AFTER_RE.match(
        sentence[hit.end :]
    ):
        return f"states {hit.text} as a bound, not a value"
    guess = _GUESS_RE.search(sentence)
    if guess is not None:
        return f"states {hit.text} as a guess ({guess.group(0)!r})"
    return None


def _part_of(sentence: str, hit: NumberMention, money: bool) -> NumberMention | None:
    """``171 tickets ..., but only 164 of them ...``: the truth is a part (``of them``,
    ``of these``) of an earlier value of its kind, which is the committed one."""
    if not _SUBSET_AFTER_RE.match(sentence[hit.end :]):
        return None
    earlier = [
        m
        for m in find_all_numbers(sentence[: hit.start])
        if not m.ambiguous
        and _same_kind(m, hit, money)
        and not _year_like(m)
        and not _REFERENCE_BEFORE_RE.search(m.before)
    ]
    return earlier[-1] if earlier else None


def _later_value(statement: Commitment, hit: NumberMention, money: bool) -> NumberMention | None:
    """A value of the truth's kind right after a copula in a trailing paragraph skipped as a
    supporting remark (``Based on the policy, revenue was $35,100.00.``): it may be the
    corrected answer."""
    for text in statement.later:
        for m in find_all_numbers(text):
            if (
                not m.ambiguous
                and _same_kind(m, hit, money)
                and not _year_like(m)
                and not math.isclose(m.value, hit.value, rel_tol=1e-9, abs_tol=1e-12)
                and _COPULA_BEFORE_RE.search(text[: m.start][-40:])
            ):
                return m
    return None


def _candidates(
    hit: NumberMention, form: AskedForm, asked: frozenset[float], *, reference: bool = True
) -> Candidate:
    """Whether a number of a text is another value of the truth's kind (rule 11): not the
    truth or a restatement, in no parentheses, no year (unless the truth is one), no count
    of rows, no part (``of them``), no number the question states and, with ``reference``,
    not after a reference word."""

    def candidate(text: str, m: NumberMention) -> bool:
        return (
            not m.ambiguous
            and _same_kind(m, hit, form.money)
            and not math.isclose(m.value, hit.value, rel_tol=1e-9, abs_tol=1e-12)
            and not restates(m, hit)
            and _outside_parentheses(text)[m.start]
            and (_year_like(hit) or not _year_like(m))
            and not _meta_count(text, m)
            and not _SUBSET_AFTER_RE.match(text[m.end :])
            and not (not m.currency and not m.percent and m.value in asked)
            and not (reference and _REFERENCE_BEFORE_RE.search(m.before))
        )

    return candidate


def _round_four(
    statement: Commitment, hit: NumberMention, form: AskedForm, asked: frozenset[float]
) -> tuple[str, bool] | None:
    """Rule 11's reasons, with whether each is uncertain (else it fails): a correction in
    the committed sentence, a sub-total, both directions of a change, a later value."""
    sentence = statement.sentence
    corrected = self_corrected(sentence, hit, _candidates(hit, form, asked))
    if corrected is not None:
        return f"ends on another value, {corrected.text}, after {hit.text}", False
    total = subtotal(sentence, hit, _candidates(hit, form, asked, reference=False))
    if total is not None:
        return f"states {hit.text} out of {total.text}: it may be a sub-total", True
    later = later_rival((*statement.following, *statement.later), _candidates(hit, form, asked))
    if later is not None:
        return f"states {hit.text}, but a later sentence states {later[1].text}", True
    return None


_QUESTIONED_RE = re.compile(
    r"^[ \t*_`]*(?:(?:[^\W\d_]+[ \t*_`]*){0,3}|,[ \t]*(?:[^\W\d_]+[ \t*_`]*){1,2})\?"
)
"""After a number: a question mark right after it, after at most three words, or after a
comma and one or two words (``$1,234,567.89?``, ``1.234 thousand euros?``, ``…, maybe?``)
withdraws the commitment; a longer question or one after other punctuation (``4,821 — want
a breakdown?``) does not."""


def check_numeric(
    answer: str,
    expected: float,
    *,
    tolerance_abs: float = 0.0,
    tolerance_rel: float = 0.005,
    naive: float | None = None,
    currency: str | None = None,
    name: str = "numeric",
    question: str | None = None,
) -> GradeCheck:
    """Grade the committed number in ``answer`` against ``expected``; ``naive`` is a
    known-wrong value; ``currency`` the ISO code the question asks the amount in
    (:func:`asked_currency`; ``None``: the question names none); ``question`` the task's
    text, whose own numbers (a window's ``18:00``, a threshold) restated in the answer are
    its parameters, not rival answers (:func:`question_numbers`)."""
    asked = question_numbers(question or "")
    form = asked_form(question or "")
    original = commitment(answer)
    statement = _in_form(original, form)
    where = statement.where
    mentions = find_all_numbers(statement.sentence)
    parsed = [m for m in mentions if not m.ambiguous and not _meta_count(statement.sentence, m)]
    ambiguous = [m.text for m in mentions if m.ambiguous]
    tol = tolerance(expected, tolerance_abs, tolerance_rel)
    bound = (
        f"{format_number(expected)} ± {format_number(tol)} "
        f"(max of abs {format_number(tolerance_abs)}, rel {tolerance_rel:g})"
    )
    found = [m.text for m in mentions]
    unparsed = f" ({', '.join(ambiguous)}: ambiguous grouping, not read)" if ambiguous else ""
    said = f"{where} ({original.sentence[:100]!r})"

    def fail(reason: str, *, uncertain: bool = False) -> GradeCheck:
        if uncertain:
            reason = f"uncertain: {reason}; the rules cannot settle it"
        return GradeCheck(
            name=name,
            passed=False,
            reason=reason,
            expected=expected,
            found=found or None,
            uncertain=uncertain,
        )

    declined = _DECLINE_RE.match(statement.sentence)
    if declined is not None:
        return fail(
            f"{said} declines to answer ({declined.group(0).strip()!r}): numbers it gives as "
            f"examples or readings are not a committed answer; expected {bound}"
        )

    if form.signed and mixed_direction(statement.sentence):
        return fail(f"{said} states a change with words of both directions", uncertain=True)
    tols = (tolerance_abs, tolerance_rel)
    in_truth = [m for m in parsed if _reads_as(m, expected, tols, form)]
    wanted = currency or WORLD_CURRENCY

    def in_wanted(m: NumberMention) -> bool:
        bare_dollar = m.text.lstrip("-−+").startswith("$") and m.currency_code == "USD"
        return m.currency_code in (None, wanted) or (wanted in _OTHER_DOLLARS and bare_dollar)

    hit = next((m for m in in_truth if in_wanted(m)), None)
    foreign = next((m for m in in_truth if not in_wanted(m)), None)
    if hit is None and foreign is not None:
        written = f"{foreign.text} is in {foreign.currency_code}"
        if currency is None:
            return fail(
                f"{said} states {written} and the question names no currency (the world "
                f"keeps {WORLD_CURRENCY})",
                uncertain=True,
            )
        return fail(
            f"{said} states {written}; the question asks for {currency} (another currency "
            f"fails unless the converted {currency} amount is stated); expected {bound}"
        )
    if hit is not None and negated(statement.sentence, hit):
        return fail(f"{said} denies {hit.text} (the truth); expected {bound}")
    if hit is not None:
        unsure = _unsure_single(statement.sentence, hit)
        if unsure is not None:
            return fail(f"{said} {unsure}; expected {bound} stated as the answer")
    if hit is not None:
        caveats_out = blank_caveats(statement, hit)
        if caveats_out != statement:
            statement = caveats_out
            parsed = [
                m
                for m in find_all_numbers(statement.sentence)
                if not m.ambiguous and not _meta_count(statement.sentence, m)
            ]
    naive_differs = (
        naive is not None
        and not math.isnan(naive)
        and not within(naive, expected, tolerance_abs, tolerance_rel)
    )
    if naive is not None and naive_differs and hit is not None:
        caveated = alternative_reading(statement, hit, naive, *tols)
        if caveated is not None and caveated != statement:
            statement = caveated
            parsed = [
                m
                for m in find_all_numbers(statement.sentence)
                if not m.ambiguous and not _meta_count(statement.sentence, m)
            ]
    if naive is not None and naive_differs:
        span = [statement.sentence, *statement.following]
        for text in span:
            wrong = next((m for m in find_all_numbers(text) if _hits(m, naive, *tols)), None)
            if wrong is None:
                continue
            what = f"{said} or what follows it"
            if hit is not None:
                return fail(
                    f"{what} states both the truth ({hit.text}) and the known-wrong value "
                    f"{wrong.text} (naive answer {format_number(naive)}): a hedge fails"
                )
            return fail(
                f"{what} states {wrong.text}, the known-wrong (naive) answer "
                f"{format_number(naive)}; expected {bound}"
            )
    if not parsed:
        return fail(f"no number in {where}{unparsed}; expected {bound}")
    if hit is None:
        earlier = next(
            (
                m
                for text in statement.preceding
                for m in find_all_numbers(text)
                if _hits(m, expected, *tols)
                and m.currency_code in (None, wanted)
                and not negated(text, m)
                and not _meta_count(text, m)
                and not _QUESTIONED_RE.match(text[m.end :])
            ),
            None,
        )
        if earlier is not None and not _hedge_words(statement.sentence, None):
            return fail(
                f"there is no final-answer line; {said} states {', '.join(found)}, but an "
                f"earlier sentence of the same paragraph states {earlier.text} (within "
                f"{bound})",
                uncertain=True,
            )
        return fail(f"{said} states {', '.join(found)}; none is within {bound}{unparsed}")
    if _QUESTIONED_RE.match(statement.sentence[hit.end :]):
        return fail(
            f"{said} ends the clause of {hit.text} with a question mark, which withdraws the "
            f"commitment; expected {bound} stated"
        )
    hits = [m for m in parsed if _reads_as(m, expected, tols, form)]
    committed = committed_value(statement.sentence, hit, form.money)
    if committed is not None and all(committed.start != m.start for m in hits):
        return fail(
            f"{said} commits to {committed.text}; {hit.text} appears only as an intermediate "
            f"figure; expected {bound}"
        )
    part = _part_of(statement.sentence, hit, form.money)
    if part is not None:
        return fail(f"{said} commits to {part.text}; {hit.text} is a part of it; expected {bound}")
    hedge = find_hedge(statement, hit, expected, tolerance_abs, tolerance_rel, asked, form.money)
    if hedge is not None:
        return fail(f"{where} states {hit.text} but hedges: {hedge}; a hedge fails")
    round_four = _round_four(statement, hit, form, asked)
    if round_four is not None:
        return fail(f"{said} {round_four[0]}", uncertain=round_four[1])
    approximate = _APPROXIMATE_RE.search(statement.sentence)
    if approximate is not None:
        return fail(
            f"{said} states {hit.text} as an approximation ({approximate.group(0)!r})",
            uncertain=True,
        )
    later = _later_value(statement, hit, form.money)
    if later is not None:
        return fail(
            f"{where} states {hit.text}, but a later remark states {later.text} after a copula",
            uncertain=True,
        )
    if _COMPARISON_RE.search(statement.sentence):
        rival = [
            m
            for m in parsed
            if _same_kind(m, hit, form.money)
            and not _hits(m, expected, *tols)
            and not restates(m, hit)
            and not (_year_like(m) and not _year_like(hit))
        ]
        if rival:
            return fail(
                f"{said} compares {hit.text} with {rival[0].text} without saying which is "
                f"the answer",
                uncertain=True,
            )
    if not _in_bold(statement.sentence, hit):
        outside = _outside_parentheses(statement.sentence)
        rivals = [
            m
            for m in parsed
            if _same_kind(m, hit, form.money)
            and outside[m.start]
            and not _SUBSET_AFTER_RE.match(statement.sentence[m.end :])
            and not _hits(m, expected, *tols)
            and not restates(m, hit)
            and not (_year_like(m) and not _year_like(hit))
            and not (not m.currency and not m.percent and m.value in asked)
            and not _REFERENCE_BEFORE_RE.search(m.before)
            and not (
                m.end <= hit.start and _CONTRAST_RE.search(statement.sentence[m.end : hit.start])
            )
        ]
        if rivals:
            return fail(
                f"{said} states {hit.text} and also {rivals[0].text} for what may be the "
                f"asked quantity",
                uncertain=True,
            )
    reason = f"{where} states {hit.text}, within {bound}"
    return GradeCheck(name=name, passed=True, reason=reason, expected=expected, found=hit.text)
