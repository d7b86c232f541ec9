"""Columns and rows of a SQL tool's result, in the shapes MCP servers return.

JSON: ``{"columns": [...], "rows": [[...]]}`` (columns as names or ``{name, type}``), rows as
objects, a list of row objects or of row lists, ``{"columns", "values"|"data"}``, and any of
these wrapped in ``{"data"|"result"|"results": ...}`` (e.g. ``{"success": true, "data":
{"rows": [...]}}``). Text tables: markdown pipe tables, DuckDB's box rendering (``duckbox``,
with its type row), psql-style tables (``a | b`` over ``---+---``, ``(n rows)`` footer),
whitespace-aligned tables under a dashed rule (``tabulate``'s ``simple``), and CSV or TSV.
Text cells become ``int``/``float`` where they read as numbers and ``None`` for
``NULL``/``None``/empty. Anything else, or a text table the server cut short (``…`` rows), is
a :class:`~dabench.errors.HarnessError` quoting the first 200 characters.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from dabench.errors import HarnessError

Table = tuple[list[str], list[list[Any]]]

_WRAPPERS = ("data", "result", "results", "content", "output")
_NULLS = {"", "null", "none", "nil", "<null>", "∅"}
_ELISION = {"…", "...", "·", "⋮"}
_BOX_BORDER = re.compile(r"^\s*[┌├└╞╘╒╭╰+][─═┬┼┴╤╪╧┄+\-]*[┐┤┘╡╛╕╮╯+]\s*$")
_RULE = re.compile(r"^\s*[|+]?[\s:=\-+|]*-[\s:=\-+|]*$")
_FOOTER = re.compile(
    r"^\(?(?P<total>[\d,]+) rows?\)?(?:\s+\(?(?P<shown>[\d,]+) shown\)?)?(?:\s+\d+ columns?)?$",
    re.IGNORECASE,
)
_HUMAN = re.compile(r"^\(-?[\d.]+ (thousand|million|billion|trillion)\)$")
"""The CLI's human-readable hint under a large number, e.g. ``(123.46 million)``."""
_ROW_COUNT = re.compile(r"^\s*\(?\d+ rows?\)?(\s*\(.*\))?\s*$", re.IGNORECASE)


def parse_sql_result(text: str, who: str = "oracle") -> Table:
    """Columns and rows of a SQL tool's result text (see the module docstring)."""
    stripped = text.strip()
    try:
        body = json.loads(stripped)
    except json.JSONDecodeError:
        body = None
    else:
        table = _from_json(body)
        if table is not None:
            return table
        raise HarnessError(f"{who}: unrecognised SQL tool result: {stripped[:200]}")
    table = _from_text(stripped)
    if table is None:
        raise HarnessError(f"{who}: unrecognised SQL tool result: {stripped[:200]}")
    if any(str(c).strip() in _ELISION for row in table[1] for c in row):
        raise HarnessError(f"{who}: the SQL tool result was cut short (… rows): {stripped[:200]}")
    return table


def _column_name(column: Any) -> str:
    if isinstance(column, dict):
        return str(column.get("name", column.get("column", "")))
    return str(column)


def _rows(columns: list[str], rows: list[Any]) -> Table | None:
    if rows and all(isinstance(r, dict) for r in rows):
        columns = columns or list(rows[0])
        return columns, [[r.get(c) for c in columns] for r in rows]
    if all(isinstance(r, list) for r in rows):
        width = max((len(r) for r in rows), default=len(columns))
        columns = columns or [f"column{i}" for i in range(width)]
        return columns, [list(r) for r in rows]
    return None


def _from_json(body: Any, depth: int = 0) -> Table | None:
    if depth > 3:
        return None
    if isinstance(body, list):
        return _rows([], body)
    if not isinstance(body, dict):
        return None
    columns = body.get("columns")
    names = [_column_name(c) for c in columns] if isinstance(columns, list) else []
    for key in ("rows", "values", "data", "records"):
        rows = body.get(key)
        if isinstance(rows, list):
            table = _rows(names, rows)
            if table is not None:
                return table
    for key in _WRAPPERS:
        inner = body.get(key)
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except json.JSONDecodeError:
                continue
        if isinstance(inner, dict | list):
            table = _from_json(inner, depth + 1)
            if table is not None:
                return table
    return None


def _cell(text: str) -> Any:
    value = text.strip()
    if value.lower() in _NULLS:
        return None
    if re.fullmatch(r"[+-]?\d+", value):
        return int(value)
    try:
        number = float(value)
    except ValueError:
        return value
    return number if value.lower() not in {"nan", "inf", "-inf", "infinity"} else value


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def _from_text(text: str) -> Table | None:
    lines = _lines(text)
    if not lines:
        return None
    if any(_BOX_BORDER.match(line) for line in lines) and any("│" in line for line in lines):
        return _box(lines)
    for i, line in enumerate(lines[1:], start=1):
        if _RULE.match(line) and not _ROW_COUNT.match(line):
            return _ruled(lines[i - 1], line, lines[i + 1 :])
    return _delimited(lines)


def _split_bars(line: str, bar: str = "|", outer: bool = True) -> list[str]:
    """Cells of a bar-separated line; ``outer``: the line starts and ends with a bar
    (markdown, box), else only inner bars separate (psql, where a row may end in ``|``
    before an empty last cell)."""
    inner = line.strip()
    if outer and inner.startswith(bar):
        inner = inner[1:]
    if outer and inner.endswith(bar):
        inner = inner[:-1]
    return [c.strip() for c in inner.split(bar)]


def _box(lines: list[str]) -> Table | None:
    """DuckDB's box rendering: names, then type row(s), a rule, the rows."""
    header: list[list[str]] = []
    body: list[list[str]] = []
    seen_rule = False
    for line in lines:
        if _BOX_BORDER.match(line):
            seen_rule = seen_rule or line.strip()[0] in "├╞"
            continue
        if "│" not in line:
            continue
        cells = _split_bars(line, "│")
        (body if seen_rule else header).append(cells)
    if not header:
        return None
    columns = header[0]
    footer = [r for r in body if (len(r) == 1 and len(columns) > 1) or _FOOTER.match(r[0])]
    for cells in footer:
        shown = _FOOTER.match(cells[0])
        if shown is None or (shown["shown"] and shown["shown"] != shown["total"]):
            raise HarnessError(f"the SQL tool result was cut short: {' '.join(cells)[:200]}")
    rows = [[_cell(c) for c in r] for r in body if r not in footer and not _is_hint(r)]
    if any(len(r) != len(columns) for r in rows):
        return None
    return columns, rows


def _is_hint(cells: list[str]) -> bool:
    return any(cells) and all(not c or _HUMAN.match(c) for c in cells)


def _ruled(header: str, rule: str, rest: list[str]) -> Table | None:
    """A header over a dashed rule: pipe-separated (markdown, psql) or column-aligned."""
    rows_text = [r for r in rest if not _ROW_COUNT.match(r) and not _RULE.match(r)]
    if "|" in header:
        outer = header.strip().startswith("|")
        columns = _split_bars(header, outer=outer)
        piped = [r for r in rest if not _RULE.match(r)]
        end = next((i for i, r in enumerate(piped) if "|" not in r), len(piped))
        rows = [
            _split_bars(r, outer=outer) for r in piped[:end]
        ]  # a trailing "3 rows returned" ends it
        if any(len(r) != len(columns) for r in rows):
            return None
        return columns, [[_cell(c) for c in r] for r in rows]
    spans = [m.span() for m in re.finditer(r"-+", rule)]
    if not spans:
        return None

    def cut(line: str) -> list[str]:
        starts = [s for s, _ in spans] + [max(len(line), spans[-1][1])]
        return [line[starts[i] : starts[i + 1]].strip() for i in range(len(spans))]

    return cut(header), [[_cell(c) for c in cut(r)] for r in rows_text]


def _delimited(lines: list[str]) -> Table | None:
    """CSV or TSV with a header line (every line with the same number of fields > 1)."""
    for delimiter in ("\t", ","):
        if delimiter not in lines[0]:
            continue
        rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter))
        width = len(rows[0])
        if width > 1 and all(len(r) == width for r in rows):
            return [c.strip() for c in rows[0]], [[_cell(c) for c in r] for r in rows[1:]]
    return None
