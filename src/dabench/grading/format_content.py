"""The content of a structured format answer, checked against the task's truth rows.

A format task's ``truth_sql`` returns what the answer must list. When the form is a JSON
object (or array of objects), bullets or a markdown table, every item is compared with the
truth (:func:`check_content`):

- ``json``: each object's values, keyed by the required keys in the truth's column order
  (else the truth's column names), equal one truth row;
- ``bullets``: each bullet names every cell of one truth row (strings as whole words, case
  ignored; numbers among its numbers), and every truth row is named by one bullet;
- ``markdown_table``: each data row (a ``Total`` row excepted) holds one truth row in the
  columns whose headers name the truth's columns.

Rows are paired one to one (a bipartite matching), in any order unless the question asks
for one ("most tickets first", "sorted", "in descending order"), then in the truth's order.
Numbers compare with the task's tolerance on non-integer columns (exactly otherwise), or
rounded to the two or more decimals written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from dabench.grading.answer import focus
from dabench.grading.exec_sql import (
    Cell,
    Row,
    Tolerance,
    names_value,
    normalize_rows,
    tolerant_columns,
    value_span,
)
from dabench.grading.formats import bullet_items, clean_cell, find_table, header_index, json_value
from dabench.grading.numbers import find_all_numbers
from dabench.journal.records import GradeCheck
from dabench.tasks.model import FormatSpec

_ORDER_RE = re.compile(
    r"\b(?:most|highest|largest|biggest|longest|fewest|lowest|smallest|least|shortest|oldest"
    r"|newest|latest|earliest|top)\b[\w ]{0,30}?\bfirst\b|\bsorted\b|\bordered\b|\branked\b"
    r"|\bin (?:descending|ascending|alphabetical|chronological|reverse) order\b"
    r"|\b(?:descending|ascending)\b",
    re.IGNORECASE,
)
_BULLET_MARKER_RE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_TOTAL_RE = re.compile(r"^(?:grand )?total\b")


def asks_order(question: str | None) -> bool:
    """True when the question asks for an order of the rows ("most tickets first")."""
    return bool(question) and _ORDER_RE.search(question or "") is not None


def _match(items: Sequence[Any], rows: list[Row], fits: Callable[[Any, Row], bool]) -> bool:
    """True when every item pairs with a distinct truth row that it fits (Kuhn's augmenting
    paths; the lists are short)."""
    owner: dict[int, int] = {}

    def place(i: int, seen: set[int]) -> bool:
        for r, row in enumerate(rows):
            if r in seen or not fits(items[i], row):
                continue
            seen.add(r)
            if r not in owner or place(owner[r], seen):
                owner[r] = i
                return True
        return False

    return all(place(i, set()) for i in range(len(items)))


def _names_row(text: str, row: Row, tol: Tolerance, flags: Sequence[bool]) -> bool:
    return all(
        names_value(text, cell, tol, flag) or (cell is None and not text.strip())
        for cell, flag in zip(row, flags, strict=True)
    )


def _cell_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _cell_fits(text: str, cell: Cell, tol: Tolerance, flag: bool) -> bool:
    if isinstance(cell, str):
        return clean_cell(text) == cell.strip().lower()
    return names_value(text, cell, tol, flag)


def _keys(spec: FormatSpec, columns: Sequence[str]) -> list[tuple[str, str]]:
    """Per truth column: the required key naming it (by position) and its own name."""
    return [(spec.columns[i] if i < len(spec.columns) else c, c) for i, c in enumerate(columns)]


def _table(
    section: str, names: list[tuple[str, str]]
) -> tuple[list[int | None], list[list[str]], list[list[str]]] | None:
    """The first table's layout: per truth column the header position that names it
    (:func:`~dabench.grading.formats.header_index`), its data rows and its ``Total`` rows."""
    table = find_table(section)
    if table is None:
        return None
    where = [_position(table[0], pair) for pair in names]
    if all(w is None for w in where):
        return None
    totals = [r for r in table[1] if r and _TOTAL_RE.match(clean_cell(r[0]))]
    return where, [r for r in table[1] if r not in totals], totals


def _project(row: list[str], where: list[int | None]) -> list[str | None]:
    return [row[w] if w is not None and w < len(row) else None for w in where]


def _items(answer: str, spec: FormatSpec, columns: Sequence[str]) -> list[Any] | None:
    """The answer's items, shaped for :func:`_fits`: bullet texts (struck-through words
    removed), table rows (cells in the truth's column order, ``None`` for a column the
    header lacks) or JSON rows."""
    section = focus(answer).section
    if spec.kind == "bullets":
        return [_STRUCK_RE.sub(" ", _BULLET_MARKER_RE.sub("", b)) for b in bullet_items(section)]
    names = _keys(spec, columns)
    if spec.kind == "markdown_table":
        layout = _table(section, names)
        return None if layout is None else [_project(r, layout[0]) for r in layout[1]]
    try:
        value = json_value(section)
    except json.JSONDecodeError:
        return None
    objects = value if isinstance(value, list) else [value]
    if not all(isinstance(o, dict) for o in objects):
        return None
    return [[_cell_text(o.get(k, o.get(c))) for k, c in names] for o in objects]


def _position(header: list[str], names: tuple[str, str]) -> int | None:
    return next((i for i in (header_index(header, n) for n in names) if i is not None), None)


def _total_misfit(
    answer: str, spec: FormatSpec, columns: Sequence[str], gold: list[Row], tol: Tolerance
) -> str | None:
    """A table's ``Total`` row that states a number other than the sum of a numeric truth
    column (blank or wordy cells are not checked), or ``None``."""
    if spec.kind != "markdown_table":
        return None
    layout = _table(focus(answer).section, _keys(spec, columns))
    for total in layout[2] if layout else []:
        for j, cell in enumerate(_project(total, layout[0] if layout else [])):
            values = [row[j] for row in gold]
            if cell is None or not find_all_numbers(cell) or not all(map(_is_amount, values)):
                continue
            whole = sum(v for v in values if isinstance(v, int | float))
            if not names_value(cell, whole, tol, not all(isinstance(v, int) for v in values)):
                return f"the Total row states {cell!r} for {columns[j]}, whose truth sum is {whole}"
    return None


def _is_amount(cell: Cell) -> bool:
    return isinstance(cell, int | float) and not isinstance(cell, bool)


_STRUCK_RE = re.compile(r"~~.*?~~")
_ASIDE_RE = re.compile(r"\([^()]*\)|\[[^\]]*\]")
_NEGATION_RE = re.compile(r"\b(?:not|no|non|never|except|excluding|without)\b|n't\b", re.I)
_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


def _bullet_rest(text: str, row: Row, tol: Tolerance, flags: Sequence[bool]) -> str:
    """What a bullet says besides the row's cells: each cell's first mention removed, then
    asides in brackets ("(24 products)", "(not Surf)")."""
    for cell, flag in zip(row, flags, strict=True):
        span = value_span(text, cell, tol, flag)
        if span is not None:
            text = f"{text[: span[0]]} {text[span[1] :]}"
    return _ASIDE_RE.sub(" ", text)


def _substantive(rest: str, known: set[str], others: Sequence[str]) -> str | None:
    """Why the rest of a bullet says something besides its truth row: a number (another
    value, the far end of a range), a negation, another truth row's string or a capitalised
    word the question does not use (an invented item); ``None`` when it is only labels,
    units and punctuation."""
    if re.search(r"\d", rest):
        return "another number"
    if _NEGATION_RE.search(rest):
        return "a negation"
    if any(re.search(rf"(?<!\w){re.escape(o)}(?!\w)", rest, re.I) for o in others):
        return "another truth row"
    for word in _WORD_RE.findall(rest):
        if word[0].isupper() and _stem(word) not in known:
            return f"another item ({word})"
    return None


def _stem(word: str) -> str:
    return word.lower().removesuffix("s")


def check_content(
    answer: str,
    spec: FormatSpec,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    question: str | None = None,
    tolerance_abs: float = 0.0,
    tolerance_rel: float = 0.0,
) -> GradeCheck | None:
    """Compare every item of a structured answer with the truth rows (see the module);
    ``None`` when there is nothing to compare (a single number, no truth rows, an answer
    whose items cannot be read: the form check fails it)."""
    if spec.kind == "single_number" or not rows or not columns:
        return None
    items = _items(answer, spec, columns)
    if items is None:
        return None
    gold = normalize_rows(rows)
    tol = Tolerance(tolerance_abs, tolerance_rel)
    flags = tolerant_columns(gold)

    known = {_stem(w) for w in _WORD_RE.findall(f"{question or ''} {' '.join(columns)}")}
    strings = [str(c) for row in gold for c in row if isinstance(c, str)]

    def fits(item: Any, row: Row) -> bool:
        if isinstance(item, str):
            others = [o for o in strings if o not in row]
            rest = _bullet_rest(item, row, tol, flags)
            return _names_row(item, row, tol, flags) and not _substantive(rest, known, others)
        return all(
            c is not None and _cell_fits(c, g, tol, f)
            for c, g, f in zip(item, row, flags, strict=True)
            if c is not None or g is not None
        )

    ordered = asks_order(question)
    if spec.kind == "bullets" and spec.n is not None:
        # n bullets asked: the truth's first n rows (fewer rows: the bullets after them pad)
        items, gold = items[: len(gold)], gold[: spec.n]
    if ordered:
        passed = len(items) == len(gold) and all(map(fits, items, gold))
    else:
        passed = len(items) == len(gold) and _match(items, gold, fits)
    total = _total_misfit(answer, spec, columns, gold, tol)
    how = "in the asked order" if ordered else "in any order"
    expected = {"columns": list(columns), "rows": [list(r) for r in gold[:20]], "ordered": ordered}
    if passed and total is None:
        return GradeCheck(
            name="content",
            passed=True,
            reason=f"every item matches one truth row ({len(gold)} rows, {how})",
            expected=expected,
            found=items[:20],
        )
    return GradeCheck(
        name="content",
        passed=False,
        reason=(
            f"the items do not match the {len(gold)} truth rows one to one ({how}): "
            f"{len(items)} items, {total or _first_misfit(items, gold, fits)}"
        ),
        expected=expected,
        found=items[:20],
    )


def _first_misfit(items: Sequence[Any], gold: list[Row], fits: Callable[[Any, Row], bool]) -> str:
    for item in items:
        if not any(fits(item, row) for row in gold):
            return f"{item!r} matches no truth row"
    for row in gold:
        if not any(fits(item, row) for item in items):
            return f"no item gives the truth row {list(row)!r}"
    return "rows out of order or matched twice"
