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
)
from dabench.grading.formats import bullet_items, clean_cell, find_table, json_value
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


def _items(answer: str, spec: FormatSpec, columns: Sequence[str]) -> list[Any] | None:
    """The answer's items, shaped for :func:`_fits`: bullet texts, table rows (cells in the
    truth's column order, ``None`` for a column the header lacks) or JSON rows."""
    section = focus(answer).section
    if spec.kind == "bullets":
        return [_BULLET_MARKER_RE.sub("", line) for line in bullet_items(section)]
    keys = [spec.columns[i] if i < len(spec.columns) else c for i, c in enumerate(columns)]
    if spec.kind == "markdown_table":
        table = find_table(section)
        if table is None:
            return None
        header = [clean_cell(h) for h in table[0]]
        where = [_position(header, (k, c)) for k, c in zip(keys, columns, strict=True)]
        if all(w is None for w in where):
            return None
        body = [r for r in table[1] if not (r and _TOTAL_RE.match(clean_cell(r[0])))]
        return [[r[w] if w is not None and w < len(r) else None for w in where] for r in body]
    try:
        value = json_value(section)
    except json.JSONDecodeError:
        return None
    objects = value if isinstance(value, list) else [value]
    if not all(isinstance(o, dict) for o in objects):
        return None
    return [
        [_cell_text(o.get(k, o.get(c))) for k, c in zip(keys, columns, strict=True)]
        for o in objects
    ]


def _position(header: list[str], names: tuple[str, str]) -> int | None:
    return next((header.index(clean_cell(n)) for n in names if clean_cell(n) in header), None)


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

    def fits(item: Any, row: Row) -> bool:
        if isinstance(item, str):
            return _names_row(item, row, tol, flags)
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
    how = "in the asked order" if ordered else "in any order"
    expected = {"columns": list(columns), "rows": [list(r) for r in gold[:20]], "ordered": ordered}
    if passed:
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
            f"{len(items)} items, {_first_misfit(items, gold, fits)}"
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
