"""Text tables: markdown pipe tables, DuckDB's box rendering (``duckbox``, with its type
row), psql-style tables (``a | b`` over ``---+---``, ``(n rows)`` footer), whitespace-aligned
tables under a dashed rule (``tabulate``'s ``simple``), and CSV or TSV with a header line.

A delimited text of one line is ambiguous (a header without rows, or a row without a header:
``[(164,)]`` must never become an empty table with columns ``[(164`` and ``)]``) and is not
read. A table the server cut short (``…`` rows, a box footer with fewer rows shown than
exist) raises :class:`~dabench.sqlresult.model.UnreadableResult`.
"""

from __future__ import annotations

import csv
import io
import re

from dabench.sqlresult.model import SqlTable, UnreadableResult, text_cell

ELISION = frozenset({"…", "...", "·", "⋮"})
_BOX_BORDER = re.compile(r"^\s*[┌├└╞╘╒╭╰+][─═┬┼┴╤╪╧┄+\-]*[┐┤┘╡╛╕╮╯+]\s*$")
_RULE = re.compile(r"^\s*[|+]?[\s:=\-+|]*-[\s:=\-+|]*$")
_FOOTER = re.compile(
    r"^\(?(?P<total>[\d,]+) rows?\)?(?:\s+\(?(?P<shown>[\d,]+) shown\)?)?(?:\s+\d+ columns?)?$",
    re.IGNORECASE,
)
_HUMAN = re.compile(r"^\(-?[\d.]+ (thousand|million|billion|trillion)\)$")
"""The CLI's human-readable hint under a large number, e.g. ``(123.46 million)``."""
_ROW_COUNT = re.compile(r"^\s*\(?\d+ rows?\)?(\s*\(.*\))?\s*$", re.IGNORECASE)


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def text_table(text: str) -> SqlTable | None:
    """The table in ``text``; ``None`` when it holds none of the shapes above."""
    lines = _lines(text)
    if not lines:
        return None
    if any(_BOX_BORDER.match(line) for line in lines) and any("│" in line for line in lines):
        table = _box(lines)
    else:
        table = next(
            (
                _ruled(lines[i - 1], line, lines[i + 1 :])
                for i, line in enumerate(lines[1:], start=1)
                if _RULE.match(line) and not _ROW_COUNT.match(line)
            ),
            None,
        ) or _delimited(lines)
    if table is not None and any(str(c).strip() in ELISION for row in table.rows for c in row):
        raise UnreadableResult("the result was cut short (… rows)")
    return table


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


def _box(lines: list[str]) -> SqlTable | None:
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
            raise UnreadableResult(f"the result was cut short: {' '.join(cells)[:200]}")
    rows = [[text_cell(c) for c in r] for r in body if r not in footer and not _is_hint(r)]
    if any(len(r) != len(columns) for r in rows):
        return None
    return SqlTable(columns, rows, "box")


def _is_hint(cells: list[str]) -> bool:
    return any(cells) and all(not c or _HUMAN.match(c) for c in cells)


def _ruled(header: str, rule: str, rest: list[str]) -> SqlTable | None:
    """A header over a dashed rule: pipe-separated (markdown, psql) or column-aligned."""
    rows_text = [r for r in rest if not _ROW_COUNT.match(r) and not _RULE.match(r)]
    if "|" in header:
        outer = header.strip().startswith("|")
        columns = _split_bars(header, outer=outer)
        piped = [r for r in rest if not _RULE.match(r)]
        end = next((i for i, r in enumerate(piped) if "|" not in r), len(piped))
        rows = [_split_bars(r, outer=outer) for r in piped[:end]]  # "3 rows returned" ends it
        if any(len(r) != len(columns) for r in rows):
            return None
        fmt = "markdown" if outer else "psql"
        return SqlTable(columns, [[text_cell(c) for c in r] for r in rows], fmt)
    spans = [m.span() for m in re.finditer(r"-+", rule)]
    if not spans:
        return None

    def cut(line: str) -> list[str]:
        starts = [s for s, _ in spans] + [max(len(line), spans[-1][1])]
        return [line[starts[i] : starts[i + 1]].strip() for i in range(len(spans))]

    return SqlTable(cut(header), [[text_cell(c) for c in cut(r)] for r in rows_text], "aligned")


def _delimited(lines: list[str]) -> SqlTable | None:
    """CSV or TSV with a header line (every line with the same number of fields > 1)."""
    for delimiter, fmt in (("\t", "tsv"), (",", "csv")):
        if delimiter not in lines[0]:
            continue
        rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter))
        width = len(rows[0])
        if width > 1 and all(len(r) == width for r in rows):
            if len(rows) == 1:
                raise UnreadableResult(
                    f"one line of {fmt.upper()}: a header without rows or a row without a "
                    "header cannot be told apart"
                )
            columns = [c.strip() for c in rows[0]]
            return SqlTable(columns, [[text_cell(c) for c in r] for r in rows[1:]], fmt)
    return None
