"""One-column CSV (``count\\n1000``): what CSV writers print for an aggregate query, a name
line then one value per line, with no delimiter to recognise it by.

Read only when nothing else can be meant: at least two lines, none blank, none holding a
delimiter (``,``, tab, ``|``); the first line a bare column name (``count``, ``count(*)``,
``sum_amount``; no spaces, not itself a number, date, boolean or NULL word); every other line
a number, date, timestamp, boolean or NULL word. Values that are words are refused (a line of
prose cannot be told from a text value), and so is a line that reads as a partial-result note.
"""

from __future__ import annotations

import re

from dabench.sqlresult.cell_guards import check_cells
from dabench.sqlresult.model import PAGING, SqlTable, partial, text_cell

_NAME = re.compile(r"[A-Za-z_?][\w()*?.]{0,63}")
_VALUE = re.compile(
    r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|\d{4}-\d\d-\d\d([ T]\d\d:\d\d(:\d\d(\.\d+)?)?)?"
    r"|true|false|null|none|\\N",
    re.IGNORECASE,
)


def one_column(text: str) -> SqlTable | None:
    """The one-column CSV in ``text`` (see the module docstring), else ``None``."""
    lines = [line.strip() for line in text.strip().splitlines()]
    if len(lines) < 2 or any(not line or any(d in line for d in ",\t|") for line in lines):
        return None
    note = next((line for line in lines if PAGING.search(line)), None)
    if note is not None:
        raise partial(repr(note[:120]))
    if not _NAME.fullmatch(lines[0]) or not all(_VALUE.fullmatch(v) for v in lines[1:]):
        return None
    check_cells([lines[0]], [[v] for v in lines[1:]])
    return SqlTable([lines[0]], [[text_cell(v)] for v in lines[1:]], "csv")
