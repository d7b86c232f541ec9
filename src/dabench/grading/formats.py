"""Format graders: valid JSON only, a single number only, exactly N bullets, a markdown table
with given columns.

All of them check the final-answer section (the text after the last ``FINAL ANSWER:``
marker, or the whole answer). Definitions:

- ``json``: the section parses as JSON with nothing else around it. One fenced code
  block (a ``json`` or bare fence) with nothing outside it is accepted and the reason says so.
  ``columns`` are keys required in the object (or in every object of a top-level array).
- ``single_number``: the section is exactly one number (sign, currency sign, thousands
  separators, ``%`` allowed unless the question forbids it; surrounding backticks or ``**``
  ignored; no trailing words or period).
- ``bullets``: exactly ``n`` top-level bullet lines (``-``, ``*``, ``+``, ``•`` or ``1.``/``1)``
  with at most one space of indentation); nested bullets are not counted.
- ``markdown_table``: a pipe table with a header row and a ``---`` separator row and at least
  one data row; every required column appears in the header (case-insensitive, emphasis and
  backticks stripped). Extra columns are allowed and reported.

The content of structured answers is checked against the truth rows by
:mod:`dabench.grading.format_content`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from dabench.grading.answer import focus
from dabench.grading.numbers import is_single_number
from dabench.journal.records import GradeCheck
from dabench.tasks.model import FormatSpec

_FENCE_RE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(?P<body>.*?)\n?```$", re.DOTALL)
_BULLET_RE = re.compile(r"^ ?(?:[-*+•]|\d{1,3}[.)])[ \t]+\S")
_SEPARATOR_CELL_RE = re.compile(r"^:?-+:?$")


def _check(passed: bool, reason: str, expected: Any = None, found: Any = None) -> GradeCheck:
    return GradeCheck(name="format", passed=passed, reason=reason, expected=expected, found=found)


_EXACT_KEYS_RE = re.compile(
    r"\b(?:exactly|only)\s+(?:the\s+|these\s+)?(?:\w+\s+)?(?:keys|fields|properties)\b"
    r"|\bno other (?:keys|fields|properties)\b",
    re.IGNORECASE,
)
"""A question that forbids keys besides the required ones ("with exactly the keys ...")."""
_OBJECT_RE = re.compile(r"\b(?:a|one|single)\s+JSON\s+object\b", re.IGNORECASE)
_MANY_RE = re.compile(r"\b(?:array|list|objects|per row|each row|one per)\b", re.IGNORECASE)


def asks_exact_keys(question: str | None) -> bool:
    """True when the question asks for exactly (or only) the required keys."""
    return bool(question) and _EXACT_KEYS_RE.search(question or "") is not None


def asks_object(question: str | None) -> bool:
    """True when the question asks for one JSON object (and no array or list of them)."""
    text = question or ""
    return _OBJECT_RE.search(text) is not None and _MANY_RE.search(text) is None


def check_json(
    section: str, required_keys: list[str], *, exact: bool = False, want_object: bool = False
) -> GradeCheck:
    """Valid JSON only (one fenced block accepted), with the required keys (``exact``: and no
    other key; ``want_object``: one object, not an array)."""
    text = section.strip()
    fenced = _FENCE_RE.match(text)
    note = ""
    if fenced:
        text = fenced.group("body").strip()
        note = " (inside one code fence, accepted)"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return _check(
            False,
            f"not valid JSON only: {exc.msg} at line {exc.lineno} column {exc.colno}",
            "valid JSON",
            text[:120],
        )
    if want_object and not isinstance(value, dict):
        reason = f"a JSON {type(value).__name__}, not the one object the question asks for"
        return _check(False, reason, "a JSON object", type(value).__name__)
    if required_keys:
        objects = value if isinstance(value, list) else [value]
        for index, obj in enumerate(objects):
            problem = _keys_problem(obj, required_keys, exact)
            if problem:
                where = f"item {index}" if isinstance(value, list) else "the object"
                found = sorted(obj) if isinstance(obj, dict) else obj
                return _check(False, f"{where} {problem}", required_keys, found)
    return _check(True, f"valid JSON{note}", "valid JSON", type(value).__name__)


def _keys_problem(obj: Any, required_keys: list[str], exact: bool) -> str | None:
    """What is wrong with the keys of one JSON item, or ``None``."""
    if not isinstance(obj, dict):
        return "is not an object"
    missing = [k for k in required_keys if k not in obj]
    if missing:
        return f"lacks key(s) {', '.join(missing)}"
    extra = [k for k in obj if k not in required_keys]
    if exact and extra:
        return f"has key(s) {', '.join(extra)} besides exactly the keys asked"
    return None


_NO_PERCENT_RE = re.compile(
    r"\b(?:no|without(?: an?| the)?)\s+(?:percent(?:age)?|%)(?:\s+(?:sign|symbol))?", re.I
)
"""A question that forbids the percent sign ("no words and no percent sign")."""


def check_single_number(section: str, question: str | None = None) -> GradeCheck:
    """Exactly one number and nothing else (no ``%`` when ``question`` forbids it)."""
    number = is_single_number(section)
    if number is None:
        return _check(False, f"not a single number only: {section.strip()[:80]!r}", "one number")
    if number.percent and question and _NO_PERCENT_RE.search(question):
        reason = f"a single number ({number.text}) with a percent sign the question forbids"
        return _check(False, reason, "one number, no percent sign", number.text)
    return _check(True, f"a single number only ({number.text})", "one number", number.text)


def bullet_items(section: str) -> list[str]:
    """The top-level bullet lines of ``section``, markers kept."""
    return [line for line in section.splitlines() if _BULLET_RE.match(line)]


def check_bullets(section: str, n: int) -> GradeCheck:
    """Exactly ``n`` top-level bullets."""
    bullets = bullet_items(section)
    passed = len(bullets) == n
    verdict = "exactly" if passed else "not"
    return _check(
        passed, f"{len(bullets)} top-level bullets, {verdict} {n} as asked", n, len(bullets)
    )


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner.removeprefix("|").removesuffix("|")
    return [c.strip() for c in inner.split("|")]


def clean_cell(cell: str) -> str:
    """A cell or item as compared: emphasis, backticks and a trailing period stripped, in
    lower case."""
    return cell.strip().rstrip(".").strip().strip("*_`").strip().rstrip(".:").strip().lower()


def find_table(section: str) -> tuple[list[str], list[list[str]]] | None:
    """The first markdown pipe table in ``section``: its header cells and data rows (cells
    as written), or ``None`` when there is no header row followed by a ``---`` row."""
    lines = section.splitlines()
    for i in range(len(lines) - 1):
        if "|" not in lines[i] or "|" not in lines[i + 1]:
            continue
        separator = _cells(lines[i + 1])
        if not separator or not all(
            _SEPARATOR_CELL_RE.match(c.replace(" ", "")) for c in separator
        ):
            continue
        rows = []
        for line in lines[i + 2 :]:
            if "|" not in line:
                break
            rows.append(_cells(line))
        return _cells(lines[i]), rows
    return None


_HEADER_FILLER = frozenset(
    {"#", "no", "number", "num", "nr", "count", "of", "level", "name", "the"}
)
"""Header words that add nothing to a column's name (``# tickets``, ``Priority level``,
``Number of stores``, ``Ticket count``); ``#`` means "number of"."""


def _header_words(text: str) -> tuple[str, ...]:
    words = re.findall(r"#|[a-z0-9]+", clean_cell(text).replace("_", " "))
    return tuple(w.removesuffix("s") for w in words if w not in _HEADER_FILLER)


def header_index(header: Sequence[str], name: str) -> int | None:
    """Where the column ``name`` is in ``header`` (cells as written): a cell equal to it
    (emphasis, backticks and case ignored), else a cell whose words are its words once
    filler is dropped (``# tickets`` and ``Ticket count`` for ``tickets``, ``Priority
    level`` for ``priority``; ``# open tickets`` is another column); ``None`` when none."""
    cleaned = [clean_cell(h) for h in header]
    if clean_cell(name) in cleaned:
        return cleaned.index(clean_cell(name))
    wanted = _header_words(name)
    matches = [i for i, h in enumerate(header) if wanted and _header_words(h) == wanted]
    return matches[0] if len(matches) == 1 else None


def check_markdown_table(section: str, columns: list[str]) -> GradeCheck:
    """A markdown pipe table whose header has every required column (:func:`header_index`)."""
    table = find_table(section)
    if table is None:
        return _check(False, "no markdown table (header row + --- separator row) found", columns)
    header = [clean_cell(c) for c in table[0]]
    rows = len(table[1])
    where = {c: header_index(table[0], c) for c in columns}
    missing = [c for c, i in where.items() if i is None]
    extra = [h for i, h in enumerate(header) if i not in where.values()]
    if missing:
        return _check(False, f"the table lacks column(s) {', '.join(missing)}", columns, header)
    if rows == 0:
        return _check(False, "the table has a header but no data rows", columns, header)
    more = f"; extra column(s) {', '.join(extra)} allowed" if extra and columns else ""
    return _check(
        True,
        f"a markdown table with the required columns and {rows} rows{more}",
        columns,
        header,
    )


def json_value(section: str) -> Any:
    """The JSON of a section (one fenced block accepted); raises ``json.JSONDecodeError``."""
    text = section.strip()
    fenced = _FENCE_RE.match(text)
    return json.loads(fenced.group("body") if fenced else text)


def numeric_part(answer: str, spec: FormatSpec) -> str:
    """The text whose number ``also_numeric`` checks: the first item of a structured answer
    (``json``: the value of the first required key, else the first key, of the first object;
    ``bullets``: the first top-level bullet; ``markdown_table``: the first data row), the
    whole answer for ``single_number`` or when no item is found."""
    section = focus(answer).section
    if spec.kind == "json":
        try:
            value = json_value(section)
        except json.JSONDecodeError:
            return answer
        obj = value[0] if isinstance(value, list) and value else value
        if isinstance(obj, dict) and obj:
            key = spec.columns[0] if spec.columns and spec.columns[0] in obj else next(iter(obj))
            return json.dumps(obj[key])
        return answer
    if spec.kind == "bullets":
        return next(iter(bullet_items(section)), answer)
    if spec.kind == "markdown_table":
        table = find_table(section)
        if table is not None and table[1]:
            return "| " + " | ".join(table[1][0]) + " |"
    return answer


def check_format(answer: str, spec: FormatSpec, *, question: str | None = None) -> GradeCheck:
    """Check ``answer`` (its final-answer section) against ``spec`` (``question``: the task's
    text, for what it forbids: a percent sign)."""
    section = focus(answer).section
    if spec.kind == "json":
        exact, want_object = asks_exact_keys(question), asks_object(question)
        return check_json(section, spec.columns, exact=exact, want_object=want_object)
    if spec.kind == "single_number":
        return check_single_number(section, question)
    if spec.kind == "bullets":
        if spec.n is None:
            raise ValueError("format 'bullets' needs n")
        return check_bullets(section, spec.n)
    return check_markdown_table(section, spec.columns)
