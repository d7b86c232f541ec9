"""Text tables: markdown pipe tables, DuckDB's box rendering (``duckbox``, with its type
row), psql-style tables (``a | b`` over ``---+---``, ``(n rows)`` footer, ``+`` line
continuation), whitespace-aligned tables under a dashed rule (``tabulate``'s ``simple``), and
CSV or TSV with a header line.

A delimited text of one line is ambiguous (a header without rows, or a row without a header:
``[(164,)]`` must never become an empty table with columns ``[(164`` and ``)]``) and is not
read. What raises :class:`~dabench.sqlresult.model.UnreadableResult` instead of being read:

- a table the server cut short: ``…`` rows, a box footer with fewer rows shown than exist, a
  line before or after the table saying so (``... 7 more rows``, ``Results limited to 1000
  rows``, ``(2 rows, 500 more)``), a row-count line that is not the number of rows read;
- a markdown row without its closing ``|`` and table lines after the table ended: a value
  holding a newline, or a second table;
- a second box, a box row that may continue the one above (DuckDB wraps long values);
- an aligned value wider than its column under the rule, an aligned last line that is a
  row-count footer disagreeing with the rows or a value;
- a psql value ending in ``+`` in the last column without the ``(n rows)`` footer that tells
  a continuation from a value;
- CSV with prose among its lines (a sentence with a comma before or after the table).

The separator under the header is the line right after it; a later line of the same shape is
a bottom border (MySQL's ``+---+``), and a line of ``-`` cells is data.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from dabench.sqlresult.cell_guards import check_cells, unbolded, without_index
from dabench.sqlresult.model import (
    COUNT_LINE as _COUNT,
)
from dabench.sqlresult.model import (
    PAGING,
    TRUNCATION,
    SqlTable,
    UnreadableResult,
    check_notes,
    count_line,
    partial,
    quoted_cell,
    text_cell,
)

_DRAWING = re.compile(r"[\u2500-\u259f]")
ELISION = frozenset({"…", "...", "·", "⋮"})
_BOX_BORDER = re.compile(r"^\s*[┌├└╞╘╒╭╰┍┝┕┏┡┗+][─═━┬┼┴╤╪╧┯┿┷┳╇┻┄+\-]*[┐┤┘╡╛╕╮╯┑┥┙┓┩┛+]\s*$")
"""A box's border: DuckDB's and tabulate's grids (light, double, ``mixed_grid``'s heavy
rules), rich's heavy head (``┏━┳━┓`` ``┡━╇━┩``). Other drawing characters are refused."""
_BOX_TOP = re.compile(r"^\s*[┌╒╭┍┏]")
_HEADER_RULE = "├╞┝┡"
_TYPE_ROW = re.compile(r"\"?[a-z][a-z0-9_]*\"?(\(.*\)|\[\d*\])*( [a-z][a-z0-9_ ]*)?")
"""A cell of DuckDB's type row under the names (``int32``, ``decimal(10,2)``, ``varchar[]``,
``timestamp with time zone``, ``"null"``)."""
_RULE = re.compile(r"^\s*[|+]?[\s:=\-+|]*-[\s:=\-+|]*$")
_FOOTER = re.compile(
    r"^\(?(?P<total>[\d,]+) rows?\)?(?:\s+\(?(?P<shown>[\d,]+) shown\)?)?(?:\s+\d+ columns?)?$",
    re.IGNORECASE,
)
_HUMAN = re.compile(r"^\(-?[\d.]+ (thousand|million|billion|trillion)\)$")
"""The CLI's human-readable hint under a large number, e.g. ``(123.46 million)``."""
_ROW_COUNT = re.compile(r"^\s*\(?\d+ rows?\)?(\s*\(.*\))?\s*$", re.IGNORECASE)


def text_table(text: str) -> SqlTable | None:
    """The table in ``text``; ``None`` when it holds none of the shapes above."""
    raw = [line.rstrip() for line in text.splitlines()]
    lines = [line for line in raw if line.strip()]
    if not lines:
        return None
    table: SqlTable | None = None
    if any(_BOX_BORDER.match(line) for line in lines) and any("│" in line for line in lines):
        table = _box(lines)
    else:
        rule = next(
            (
                i
                for i in range(1, len(raw))
                if raw[i - 1].strip() and _RULE.match(raw[i]) and not _ROW_COUNT.match(raw[i])
            ),
            None,
        )
        if rule is not None:
            table = _ruled(raw[rule - 1], raw[rule], raw[: rule - 1], raw[rule + 1 :])
        table = table or _delimited(text)
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
    if sum(1 for line in lines if _BOX_TOP.match(line)) > 1:
        raise UnreadableResult("a second table after the first (several result sets?)")
    header: list[list[str]] = []
    body: list[list[str]] = []
    outside: list[str] = []
    seen_rule = False
    for line in lines:
        if _BOX_BORDER.match(line):
            seen_rule = seen_rule or line.strip()[0] in _HEADER_RULE
            continue
        line = line.replace("┃", "│")
        if "│" not in line:
            if _DRAWING.search(line):
                raise UnreadableResult(
                    f"a box line of unknown drawing characters ({line.strip()[:60]!r})"
                )
            outside.append(line)
            continue
        cells = _split_bars(line, "│")
        (body if seen_rule else header).append(cells)
    if not header:
        return None
    empty = not seen_rule and any(count_line(line) == 0 for line in outside)  # DuckDB, 0 rows
    if len(header) > 2 or (not seen_rule and not (empty and len(header) == 2)):
        raise UnreadableResult(
            f"a box with {len(header)} lines above its header rule: which is the header?"
        )
    if len(header) == 2 and not all(_TYPE_ROW.fullmatch(c) for c in header[1]):
        raise UnreadableResult(
            f"a second header line that is not DuckDB's type row ({' | '.join(header[1])[:60]!r})"
        )
    columns = header[0]
    footer = [r for r in body if (len(r) == 1 and len(columns) > 1) or _FOOTER.match(r[0])]
    texts = [r for r in body if r not in footer and not _is_hint(r)]
    for cells in footer:
        shown = _FOOTER.match(cells[0])
        if shown is None or (shown["shown"] and shown["shown"] != shown["total"]):
            raise UnreadableResult(f"the result was cut short: {' '.join(cells)[:200]}")
        if int(shown["total"].replace(",", "")) != len(texts):
            raise UnreadableResult(
                f"the box footer {cells[0]!r} is not the {len(texts)} rows above it "
                "(a footer or a value cannot be told apart)"
            )
    if any(len(r) != len(columns) for r in texts):
        return None
    if any(c in ELISION for r in texts for c in r):
        raise UnreadableResult("the result was cut short (… rows)")
    duckdb = len(header) > 1  # a type row under the names: DuckDB prints NULL as NULL
    for above, cells in itertools.pairwise(texts):
        if any(not c for c in cells) and any(cells) and above:
            raise UnreadableResult(
                f"a box row with empty cells under another ({' | '.join(cells)[:80]!r}): the "
                "wrapped continuation of a long value or a row of empty (NULL or '') cells "
                "cannot be told apart"
            )
    columns, texts = without_index(columns, texts)
    check_cells(columns, texts)
    rows = [[text_cell(c) if c or not duckdb else "" for c in r] for r in texts]
    check_notes(outside, len(rows))
    return SqlTable(columns, rows, "box")


def _is_hint(cells: list[str]) -> bool:
    return any(cells) and all(not c or _HUMAN.match(c) for c in cells)


def _ruled(header: str, rule: str, before: list[str], after: list[str]) -> SqlTable | None:
    """A header over a dashed rule: pipe-separated (markdown, psql) or column-aligned."""
    if "|" in header:
        return _piped(header, rule, before, after)
    return _aligned(header, rule, before, after)


def _body(rule: str, after: list[str], ends: str | None) -> tuple[list[str], list[str]]:
    """The table's lines after the rule and the lines after the table: it ends at a blank
    line, at a line of the rule's shape (a bottom border) or, with ``ends``, at a line
    without that character."""
    for at, line in enumerate(after):
        if line.strip() == rule.strip():
            return after[:at], after[at + 1 :]
        if not line.strip() or (ends is not None and ends not in line):
            return after[:at], after[at:]
    return after, []


def _piped(header: str, rule: str, before: list[str], after: list[str]) -> SqlTable:
    outer = header.strip().startswith("|")
    closed = header.strip().endswith("|")
    columns = _split_bars(header, outer=outer)
    earlier = next((line for line in before if _table_line(line, header)), None)
    if earlier is not None:
        raise UnreadableResult(
            f"table lines before the header ({earlier.strip()[:80]!r}): the header is not the "
            "line over the first rule (a grid table, or a second table?)"
        )
    body, trailing = _body(rule, after, "|")
    for line in body:
        inner = line.strip()
        if outer and not (inner.startswith("|") and (inner.endswith("|") or not closed)):
            raise UnreadableResult(
                f"a markdown row without its closing '|' ({inner[:80]!r}): a value holding a "
                "newline?"
            )
    more = next((line for line in trailing if "|" in line), None)
    if more is not None:
        raise UnreadableResult(
            f"table lines after the table ended ({more.strip()[:80]!r}): a second table, or "
            "a value holding a newline"
        )
    if _spaced_bars(header, outer):
        tight = next((line for line in body if not _spaced_bars(line, outer)), None)
        if tight is not None:
            raise UnreadableResult(
                f"a '|' without spaces around it in a row ({tight.strip()[:80]!r}) where the "
                "header spaces its bars: a value holding '|'?"
            )
    rows = [_split_bars(r) for r in body] if outer else _psql_rows(body, len(columns), trailing)
    for cells in rows:
        if len(cells) != len(columns):
            raise UnreadableResult(
                f"a row of {len(cells)} cells under {len(columns)} column names "
                f"({' | '.join(cells)[:80]!r})"
            )
    check_notes(before + trailing, len(rows))
    columns, rows = without_index(unbolded(columns) if outer else columns, rows)
    check_cells(columns, rows, continuation=True if outer else "first")
    fmt = "markdown" if outer else "psql"
    return SqlTable(columns, [[text_cell(c) for c in r] for r in rows], fmt)


def _table_line(line: str, header: str) -> bool:
    """A line before a piped table's header that is itself a table row (``| a | b |``, or as
    many ``|`` as the header), not a sentence or an echoed statement."""
    inner = line.strip()
    if "|" not in inner or _RULE.match(inner):
        return False
    return (inner.startswith("|") and inner.endswith("|")) or inner.count("|") == header.count("|")


def _spaced_bars(line: str, outer: bool) -> bool:
    """Every inner ``|`` of ``line`` has a space (or psql's ``+`` mark) before it and a
    space after it, as table writers pad their cells."""
    inner = line.strip()
    if outer:
        inner = inner.removeprefix("|").removesuffix("|")
    padded = f" {inner} "
    return all(
        padded[i - 1] in " \t+" and padded[i + 1] in " \t" for i, c in enumerate(padded) if c == "|"
    )


def _psql_rows(body: list[str], width: int, trailing: list[str]) -> list[list[str]]:
    """psql's rows, a value spanning several lines joined: psql ends each line of such a
    value with ``+`` where the padding would be, and the next line leaves the other cells
    empty. In the last column a ``+`` at the line's end may also be a value's own, so a
    continuation there needs psql's ``(n rows)`` footer to agree."""
    lines = [line.split("|") for line in body]
    plain = [[c.strip() for c in cells] for cells in lines]
    if any(len(cells) != width for cells in lines):
        return plain
    rows: list[list[str]] = []
    last_column_joined = False
    joins: set[int] = set()
    for at, cells in enumerate(lines):
        marks = {j for j, c in enumerate(cells) if _marked(c, j == width - 1)}
        after = lines[at + 1] if at + 1 < len(lines) else None
        continues = (
            bool(marks)
            and after is not None
            and all(not after[j].strip() for j in range(width) if j not in marks)
        )
        values = [
            _unmarked(c) if continues and j in marks else c.strip() for j, c in enumerate(cells)
        ]
        if joins:
            last_column_joined = last_column_joined or (width - 1) in joins
            for j in joins:
                rows[-1][j] += "\n" + values[j]
        else:
            rows.append(values)
        joins = marks if continues else set()
    if not last_column_joined:
        return rows
    counts = [n for n in (count_line(line) for line in trailing) if n is not None]
    if counts and counts[0] == len(rows):
        return rows
    if counts and counts[0] == len(plain):
        return plain
    raise UnreadableResult(
        "a psql value ending in '+' in the last column: psql's line continuation or a value "
        "ending in '+' cannot be told apart without a matching (n rows) footer"
    )


def _marked(cell: str, last: bool) -> bool:
    """A psql cell whose value goes on in the next line (``+`` in place of the padding)."""
    return cell.rstrip().endswith("+") if last else cell.endswith("+")


def _unmarked(cell: str) -> str:
    return cell.rstrip()[:-1].strip()


def _aligned(header: str, rule: str, before: list[str], after: list[str]) -> SqlTable | None:
    """Columns cut at the rule's dashes; text outside them (a value wider than its column, a
    sentence) is refused rather than cut mid-word."""
    spans = [m.span() for m in re.finditer(r"-+", rule)]
    if not spans:
        return None
    gaps = [(0, spans[0][0])] + [(spans[i][1], spans[i + 1][0]) for i in range(len(spans) - 1)]

    def cut(line: str) -> list[str]:
        starts = [s for s, _ in spans] + [max(len(line), spans[-1][1])]
        return [line[starts[i] : starts[i + 1]].strip() for i in range(len(spans))]

    def overflows(line: str) -> bool:
        return any(line[a:b].strip() for a, b in gaps)

    body, trailing = _body(rule, after, None)
    if len(header.rstrip()) > spans[-1][1] or header[: spans[0][0]].strip():
        raise UnreadableResult(
            f"a header wider than the rule under it ({header.strip()[:80]!r}): not a column header"
        )
    earlier = next((line for line in before if _RULE.match(line) or _aligned_row(line, cut)), None)
    if earlier is not None:
        raise UnreadableResult(
            f"table lines before the header ({earlier.strip()[:80]!r}): a rule or rows above "
            "the line taken for the header"
        )
    for line in [header, *body]:
        if overflows(line) and TRUNCATION.search(line):
            raise partial(repr(line.strip()[:120]))
        if overflows(line):
            raise UnreadableResult(
                f"a value wider than its column under the rule ({line.strip()[:80]!r}): the "
                "columns cannot be cut"
            )
    more = next((line for line in trailing if _RULE.match(line) or _aligned_row(line, cut)), None)
    if more is not None:
        raise UnreadableResult(
            f"table lines after the table ended ({more.strip()[:80]!r}): a second table?"
        )
    notes = before + trailing
    if body and (count_line(body[-1]) is not None or _in_parentheses(body[-1], cut)):
        footer = body.pop().strip()
        said = count_line(footer)
        if TRUNCATION.search(footer):
            raise partial(repr(footer[:120]))
        if said != len(body):
            raise UnreadableResult(
                f"a last line {footer!r} under {len(body)} rows: a row-count footer that "
                "disagrees with them, or a value, cannot be told apart"
            )
    for line in body:
        cells = cut(line)
        if not any(cells[1:]) and TRUNCATION.search(line):
            raise partial(repr(line.strip()[:120]))
    check_notes(notes, len(body))
    columns, table = without_index(cut(header), [cut(r) for r in body])
    check_cells(columns, table)
    return SqlTable(columns, [[text_cell(c) for c in r] for r in table], "aligned")


def _in_parentheses(line: str, cut: Callable[[str], list[str]]) -> bool:
    """A last line such as psql's ``(2 rows, 500 more)`` (one cell in parentheses)."""
    cells = cut(line)
    stripped = line.strip()
    return not any(cells[1:]) and stripped.startswith("(") and stripped.endswith(")")


def _aligned_row(line: str, cut: Callable[[str], list[str]]) -> bool:
    cells = cut(line)
    return len(cells) > 1 and all(cells)


def _delimited(text: str) -> SqlTable | None:
    """CSV or TSV with a header line (every line with the same number of fields > 1). Only
    an unquoted empty field or NULL word is NULL: ``""`` is the empty string and ``"NULL"``
    the text NULL."""
    for delimiter, fmt in (("\t", "tsv"), (",", "csv")):
        records = _records(text, delimiter)
        if records is None or len(records[0]) < 2:
            continue
        width = len(records[0])
        if any(len(r) != width for r in records):
            continue
        if len(records) == 1:
            raise UnreadableResult(
                f"one line of {fmt.upper()}: a header without rows or a row without a "
                "header cannot be told apart"
            )
        _no_prose(records, fmt)
        _no_footer(records, fmt)
        names = [value if quoted else value.strip() for value, quoted in records[0]]
        body = records[1:]
        columns, _ = without_index(names, [[v for v, _ in r] for r in body])
        if len(columns) < len(names):
            body = [r[1:] for r in body]
        check_cells(
            columns, [[v.strip() if not q else v or '""' for v, q in r] for r in body], False
        )
        rows = [[quoted_cell(v) if q else text_cell(v) for v, q in r] for r in body]
        return SqlTable(columns, rows, fmt)
    return None


Field = tuple[str, bool]
"""A delimited field's text and whether it was quoted."""


def _records(text: str, delimiter: str) -> list[list[Field]] | None:
    """The records of delimited text (RFC 4180 quoting, a quoted field may hold newlines);
    blank lines are skipped. ``None`` when the text is not delimited (a quote left open,
    text after a closing quote)."""
    records: list[list[Field]] = []
    record: list[Field] = []
    at, end = 0, len(text)
    while True:
        if at < end and text[at] == '"':
            parts: list[str] = []
            start = at + 1
            while True:
                close = text.find('"', start)
                if close < 0:
                    return None
                parts.append(text[start:close])
                if text[close + 1 : close + 2] == '"':
                    parts.append('"')
                    start = close + 2
                    continue
                at = close + 1
                break
            if at < end and text[at] not in (delimiter, "\n", "\r"):
                return None
            record.append(("".join(parts), True))
        else:
            stop = at
            while stop < end and text[stop] not in (delimiter, "\n", "\r"):
                stop += 1
            record.append((text[at:stop], False))
            at = stop
        if at < end and text[at] == delimiter:
            at += 1
            continue
        if record != [("", False)] and not (len(record) == 1 and not record[0][0].strip()):
            records.append(record)
        record = []
        if at >= end:
            break
        at += 2 if text[at : at + 2] == "\r\n" else 1
        if at >= end:
            break
    return records or None


def _no_footer(records: list[list[Field]], fmt: str) -> None:
    """Refuse delimited text whose last line is a note split at its commas (``Showing 1,000
    of 2,500 rows``, ``Total: 1,234 rows``), or whose fields are in single quotes
    (``sqlite3 .mode quote``: a quoting this reader does not undo)."""
    last = ("\t" if fmt == "tsv" else ",").join(v for v, _ in records[-1])
    if PAGING.search(last) or count_line(last.replace("\t", " ")) is not None or _COUNT.match(last):
        raise partial(f"{last.strip()[:120]!r}, the last line of the {fmt.upper()}")
    quoted = next(
        (
            v
            for r in records
            for v, q in r
            if not q and len(v.strip()) > 1 and v.strip()[0] == v.strip()[-1] == "'"
        ),
        None,
    )
    if quoted is not None:
        raise UnreadableResult(
            f"a field in single quotes ({quoted[:40]!r}): SQL quoting, not CSV's, left on the value"
        )


def _no_prose(records: list[list[Field]], fmt: str) -> None:
    """Refuse delimited text with prose among its lines: a sentence before or after the
    table splits at its commas like a row (``Executed: SELECT a, b FROM t``). A writer
    separates fields the same way on every line (``,`` or ``, ``), a sentence puts a space
    after its comma; a header field ending in ``:`` is a sentence's."""
    spaced: list[list[Field]] = []
    tight: list[list[Field]] = []
    for record in records:
        for value, quoted in record[1:]:
            if quoted or not value.strip():
                continue
            (spaced if value[:1].isspace() else tight).append(record)
    header = records[0]
    colon = any(not q and v.strip().endswith(":") for v, q in header)
    if not (spaced and tight) and not colon:
        return
    odd = header if colon else min((spaced, tight), key=len)[0]
    line = ("\t" if fmt == "tsv" else ",").join(v for v, _ in odd)
    if TRUNCATION.search(line):
        raise partial(repr(line.strip()[:120]))
    raise UnreadableResult(
        f"prose among the {fmt.upper()} lines ({line.strip()[:80]!r}): a sentence split at its "
        "commas would read as a row"
    )
