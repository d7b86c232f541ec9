"""Structural guards over a text table's cells, applied by every text reader (markdown, box,
psql, aligned, CSV, TSV) after it has cut the lines into cells and before a table is handed
out. Each one refuses (:class:`~dabench.sqlresult.model.UnreadableResult`) a table that
cannot be told apart from another reading of the same text:

- **continuation rows**: a row, not the first, whose first cell is empty or whose cells are
  mostly empty (in psql's shape: whose first cell is empty), under another row: the wrapped
  continuation of a long value or of a value holding a newline (markdown, aligned and grid
  writers print it so) or a row of NULLs;
- **header plausibility**: a header cell that reads as a value (a number, date, timestamp or
  boolean) over a column of values of that kind (or over no rows), or a NULL word: the text
  may have no header and its first row was taken as one (``sqlite3 -csv``, ``psql -t``,
  ``tabulate(rows)``);
- **foreign drawing characters**: a cell holding a box-drawing character (polars' ``┆``, a
  border the reader does not know): the columns were not cut where the writer drew them;
- **cut values**: a cell ending in ``...`` or ``…`` (the writer shortened a long value);
- **quoted names**: a header cell in single quotes (``sqlite3 .mode quote``).

The pandas index (:func:`without_index`): an empty first header cell over exactly ``0 .. n-1``
is the writer's row numbering and is dropped; an empty first header cell over anything else is
refused.
"""

from __future__ import annotations

import re
from typing import Literal

from dabench.sqlresult.model import UnreadableResult, text_cell

_DRAWING = re.compile(r"[\u2500-\u259f]")
_DATE = re.compile(r"\d{4}-\d\d-\d\d([ T]\d\d:\d\d(:\d\d(\.\d+)?)?)?([+-]\d\d(:?\d\d)?|Z)?")
_BOOL = frozenset({"true", "false", "t", "f"})
_BOLD = re.compile(r"\*\*(.+)\*\*|__(.+)__")


def check_cells(
    columns: list[str], cells: list[list[str]], continuation: bool | Literal["first"] = True
) -> None:
    """Refuse a table whose raw ``cells`` (stripped, before NULL words and numbers are read)
    fail a guard of the module docstring; ``continuation``: ``True`` where the format does
    not mark a value's further lines, ``"first"`` for psql's shape (psql marks them with
    ``+``, but writers of its shape such as tabulate's ``presto`` do not): only a row whose
    first cell is empty is taken for a possible continuation, as psql prints NULL empty."""
    for text in [*columns, *(c for row in cells for c in row)]:
        if _DRAWING.search(text):
            raise UnreadableResult(
                f"a box-drawing character inside a cell ({text[:60]!r}): the columns were not "
                "cut where the writer drew them"
            )
        if text.endswith(("...", "…")) and text not in ("...", "…"):
            raise UnreadableResult(f"a value cut short by the writer ({text[-60:]!r})")
    if continuation:
        _no_continuation(cells, first_only=continuation == "first")
    _plausible_header(columns, cells)


def _no_continuation(cells: list[list[str]], first_only: bool) -> None:
    for at, row in enumerate(cells[1:], start=1):
        empty = sum(1 for c in row if not c)
        mostly = not first_only and 2 * empty >= len(row)
        if empty and empty < len(row) and (not row[0] or mostly):
            shown = " | ".join(row)[:80]
            raise UnreadableResult(
                f"row {at + 1} is mostly empty cells under another row ({shown!r}): the "
                "continuation of a wrapped or multi-line value or a row of NULLs cannot be "
                "told apart"
            )


def _kind(text: str) -> str | None:
    """``number``, ``date``, ``bool`` or ``null`` for a cell that reads as such a value."""
    value = text_cell(text)
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return "number"
    stripped = text.strip()
    if _DATE.fullmatch(stripped):
        return "date"
    if stripped.lower() in _BOOL:
        return "bool"
    return None


def _plausible_header(columns: list[str], cells: list[list[str]]) -> None:
    for j, name in enumerate(columns):
        if name.strip().startswith("'") and name.strip().endswith("'") and len(name.strip()) > 1:
            raise UnreadableResult(f"a column name in single quotes ({name[:40]!r})")
        kind = _kind(name)
        if kind is None:
            continue
        if kind == "null":
            raise UnreadableResult(
                f"a column without a name ({name!r}): a header row or a first data row?"
            )
        below = {_kind(row[j]) for row in cells if j < len(row)} - {"null"}
        if not below or below == {kind}:
            raise UnreadableResult(
                f"the column name {name!r} reads as a {kind} over a column of such values: "
                "the text may have no header and its first row was taken for one"
            )


def without_index(columns: list[str], cells: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """``columns`` and raw ``cells`` without pandas' row numbering: an empty first column name
    over exactly ``0, 1, ... n-1`` (``to_markdown()``, ``to_csv()`` with the index)."""
    if len(columns) < 2 or columns[0].strip():
        return columns, cells
    if [r[0].strip() if r else None for r in cells] != [str(i) for i in range(len(cells))]:
        raise UnreadableResult(
            "an unnamed first column that is not a row numbering 0..n-1: an index, or a "
            "column without a name?"
        )
    return columns[1:], [r[1:] for r in cells]


def unbolded(columns: list[str]) -> list[str]:
    """Markdown header cells without the ``**bold**`` some servers put every name in."""
    found = [_BOLD.fullmatch(c) for c in columns]
    if not columns or not all(found):
        return columns
    return [next(g for g in m.groups() if g is not None) for m in found if m is not None]
