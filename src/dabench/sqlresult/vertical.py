"""Vertical record text, one ``column: value`` line per cell (mcp-alchemy)::

    1. row
    a: 1
    b: x

    Result: 1 rows

``No rows returned`` is an empty result; ``Result: showing first N rows (output truncated)``
is a result cut short (an error, never a table). The footer's count must equal the records
read and every record must have the same columns, so a value holding a newline or
``name: value`` text cannot slip through as data.
"""

from __future__ import annotations

import re

from dabench.sqlresult.model import SqlTable, UnreadableResult, text_cell

_RECORD = re.compile(r"^\s*\*{0,30}\s*(\d+)\.\s*row\s*\**\s*$", re.IGNORECASE)
_FOOTER = re.compile(r"^\s*Result:\s*(\d+)\s+rows?\s*$", re.IGNORECASE)
_TRUNCATED = re.compile(r"^\s*Result:.*truncated", re.IGNORECASE)
EMPTY = re.compile(
    r"^\s*(no rows returned|no results?|0 rows?(?: returned)?)\.?\s*$", re.IGNORECASE
)


def looks_vertical(text: str) -> bool:
    """True when ``text`` starts with a ``1. row`` record line."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return bool(_RECORD.match(first))


def vertical_table(text: str) -> SqlTable:
    """The records of vertical text (see the module docstring)."""
    records: list[dict[str, str]] = []
    footer: int | None = None
    for line in text.strip().splitlines():
        if not line.strip():
            continue
        if _TRUNCATED.match(line):
            raise UnreadableResult(f"the result was cut short: {line.strip()}")
        if (m := _FOOTER.match(line)) is not None:
            footer = int(m.group(1))
            continue
        if (m := _RECORD.match(line)) is not None:
            if int(m.group(1)) != len(records) + 1 or footer is not None:
                raise UnreadableResult(f"record {m.group(1)} out of order")
            records.append({})
            continue
        name, sep, value = line.partition(": ")
        if not sep and line.rstrip().endswith(":"):
            name, sep, value = line.rstrip()[:-1], ":", ""
        if not records or not sep or name in records[-1]:
            raise UnreadableResult(f"a line that is no 'column: value' cell: {line.strip()[:80]}")
        records[-1][name] = value
    if footer is None:
        raise UnreadableResult("no 'Result: N rows' footer (the text may be cut short)")
    if footer != len(records):
        raise UnreadableResult(f"the footer says {footer} rows, {len(records)} were read")
    columns = list(records[0]) if records else []
    if any(list(r) != columns for r in records):
        raise UnreadableResult("records with different columns")
    return SqlTable(columns, [[text_cell(r[c]) for c in columns] for r in records], "vertical")
