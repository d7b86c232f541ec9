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


def check_json(section: str, required_keys: list[str]) -> GradeCheck:
    """Valid JSON only (one fenced block accepted), with the required keys."""
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
    if required_keys:
        objects = value if isinstance(value, list) else [value]
        for index, obj in enumerate(objects):
            if not isinstance(obj, dict):
                return _check(False, f"JSON item {index} is not an object", required_keys, obj)
            missing = [k for k in required_keys if k not in obj]
            if missing:
                where = f"item {index}" if isinstance(value, list) else "the object"
                return _check(
                    False,
                    f"{where} lacks key(s) {', '.join(missing)}",
                    required_keys,
                    sorted(obj),
                )
    return _check(True, f"valid JSON{note}", "valid JSON", type(value).__name__)


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


def check_markdown_table(section: str, columns: list[str]) -> GradeCheck:
    """A markdown pipe table whose header has every required column."""
    table = find_table(section)
    if table is None:
        return _check(False, "no markdown table (header row + --- separator row) found", columns)
    header = [clean_cell(c) for c in table[0]]
    rows = len(table[1])
    missing = [c for c in columns if clean_cell(c) not in header]
    extra = [h for h in header if h not in {clean_cell(c) for c in columns}]
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
        return check_json(section, spec.columns)
    if spec.kind == "single_number":
        return check_single_number(section, question)
    if spec.kind == "bullets":
        if spec.n is None:
            raise ValueError("format 'bullets' needs n")
        return check_bullets(section, spec.n)
    return check_markdown_table(section, spec.columns)
