"""Tables in JSON results: row objects, ``{columns, rows}``, and envelopes around them.

Rows: a list of objects (columns in order of first appearance), or a list of lists with
``columns`` beside them (names or ``{name, type}``; without names the columns are
positional). Tables sit under ``rows``/``values``/``data``/``records`` next to
``columns``/``fields``/``meta``/``schema``; envelopes ``data``, ``result``, ``results``,
``content``, ``output``, ``statements`` (dbhub: ``data.statements[i].rows``, the last
statement's), ``show`` (``dbt show --output json``), MCP content blocks
(``[{"type": "text", "text": ...}]``, the shape FastMCP puts in ``structuredContent``) and
JSON held in a string are opened, at most four deep. Text found inside (a content block's
text) is handed back to the caller to read as text.
Strings that are plain decimals (``"1000"``, ``"1.50"``: how drivers send PostgreSQL's
``numeric`` and ``bigint``) become numbers; ``"007"``, ``"+7"`` and ``"1e3"`` stay text.

Refused (:class:`UnreadableResult`), because reading them would grade a wrong table: an
envelope that says the rows are partial (``truncated``/``has_more``/``partial`` true, a next
page cursor, a note such as ``"warning": "Results limited to 3 rows"``, a row count such as
``rowCount``/``total_rows``/``count`` that is not the number of rows); duplicate column names
over row objects; row objects with keys that are not among the columns; a list of lists of
row objects (several result sets).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dabench.sqlresult.json_envelope import check_envelope
from dabench.sqlresult.model import (
    TRUNCATION,
    SqlTable,
    UnreadableResult,
    json_number,
    load_json,
    miscount,
    partial,
    positional_columns,
)

ROW_KEYS = ("rows", "values", "data", "records", "items")
COLUMN_KEYS = ("columns", "fields", "meta", "schema", "column_names", "headers")
ENVELOPES = (
    "data", "result", "results", "content", "output", "statements", "structuredContent", "show",
)  # fmt: skip
MAX_DEPTH = 4
PARTIAL_FLAGS = (
    "truncated", "is_truncated", "isTruncated", "has_more", "hasMore", "more", "partial",
    "is_partial", "incomplete", "limited", "limit_reached", "row_limit_reached",
    "rowLimitReached", "results_truncated",
)  # fmt: skip
NEXT_PAGE = (
    "next_cursor", "nextCursor", "next_page", "nextPage", "next_page_token", "nextPageToken",
)  # fmt: skip
COUNT_KEYS = (
    "rowCount", "row_count", "rowcount", "rows_count", "num_rows", "numRows", "nrows", "n_rows",
    "total_rows", "totalRows", "total_count", "totalCount", "total", "count", "rows",
)  # fmt: skip
NOTE_KEYS = (
    "warning", "warnings", "message", "messages", "note", "notes", "notice", "notices", "info",
    "status", "detail",
)  # fmt: skip

ReadText = Callable[[str], SqlTable]


def json_cell(value: Any) -> Any:
    """A JSON cell: strings that are plain decimals become numbers."""
    return json_number(value) if isinstance(value, str) else value


def _check_partial(body: dict[str, Any]) -> None:
    """Refuse an envelope that says its rows are only part of the result."""
    for key in PARTIAL_FLAGS:
        if body.get(key) is True:
            raise partial(f"{key}: true")
    for key in NEXT_PAGE:
        if body.get(key) not in (None, "", False):
            raise partial(f"{key}: {str(body[key])[:40]!r}")
    for key in NOTE_KEYS:
        notes = body.get(key)
        for note in notes if isinstance(notes, list) else [notes]:
            if isinstance(note, str) and TRUNCATION.search(note):
                raise partial(f"{key}: {note[:120]!r}")
    check_envelope(body, _opened(body), None)


def _opened(body: dict[str, Any]) -> frozenset[str]:
    """The keys of ``body`` the table reader opens itself (rows, envelopes, column lists)."""
    return frozenset(
        k
        for k, v in body.items()
        if k in ROW_KEYS or k in ENVELOPES or (k in COLUMN_KEYS and isinstance(v, list))
    )


def _check_counts(body: dict[str, Any], table: SqlTable) -> None:
    """Refuse a table whose envelope states another row count."""
    for key in COUNT_KEYS:
        count = body.get(key)
        if isinstance(count, int) and not isinstance(count, bool) and count != len(table.rows):
            raise miscount(count, key, len(table.rows))
    check_envelope(body, _opened(body), len(table.rows))


def _column_name(column: Any) -> str | None:
    if isinstance(column, dict):
        name = column.get("name", column.get("column", column.get("field")))
        return None if name is None else str(name)
    return column if isinstance(column, str) else None


def _names(body: dict[str, Any]) -> list[str] | None:
    for key in COLUMN_KEYS:
        columns = body.get(key)
        if isinstance(columns, dict) and isinstance(columns.get("fields"), list):
            columns = columns["fields"]  # BigQuery's and pandas' {"schema": {"fields": [...]}}
        elif (
            key in ("schema", "meta")
            and isinstance(columns, list)
            and not all(isinstance(c, dict) for c in columns)
        ):
            raise UnreadableResult(
                f"{key!r} is a list of {type(columns[0]).__name__ if columns else 'nothing'}:"
                " column names or their types?"
            )
        if isinstance(columns, list) and columns:
            names = [_column_name(c) for c in columns]
            if all(n is not None for n in names):
                return [n for n in names if n is not None]
    return None


def rows_table(rows: list[Any], names: list[str] | None, fmt: str = "json") -> SqlTable | None:
    """A table from a list of rows (objects, lists or tuples); ``None`` when the rows are not
    all of one such kind. A list of bare scalars is ambiguous (one row or one column) and
    raises :class:`UnreadableResult`."""
    if not rows:
        return SqlTable(names or [], [], fmt, positional=names is None)
    if all(isinstance(r, dict) for r in rows):
        if names is not None and len(set(names)) != len(names):
            raise UnreadableResult(
                f"duplicate column names {names} over rows as objects: which value is which?"
            )
        columns = list(names or [])
        for row in rows:
            extra = [k for k in row if k not in columns]
            if names is not None and extra:
                raise UnreadableResult(
                    f"row keys {extra} not among the columns {names}: names and rows disagree"
                )
            columns += extra
        return SqlTable(columns, [[json_cell(r.get(c)) for c in columns] for r in rows], fmt)
    if all(isinstance(r, list | tuple) for r in rows):
        if all(r and all(isinstance(c, dict) for c in r) for r in rows):
            raise UnreadableResult(
                "a list of lists of row objects: several result sets, not one table"
            )
        widths = {len(r) for r in rows}
        if len(widths) != 1 or (names is not None and widths != {len(names)}):
            raise UnreadableResult(
                f"rows of {sorted(widths)} values under {len(names or [])} column names"
            )
        width = widths.pop()
        if names is None:
            _no_header_row(rows, fmt)
        columns = names if names is not None else positional_columns(width)
        return SqlTable(columns, [[json_cell(c) for c in r] for r in rows], fmt, names is None)
    if all(not isinstance(r, dict | list | tuple) for r in rows):
        raise UnreadableResult(
            f"a list of {len(rows)} bare values: one row or one column cannot be told apart"
        )
    return None


BLOCK_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})
BLOCK_KEYS = frozenset(
    {"type", "text", "annotations", "_meta", "resource", "data", "mimeType", "uri", "name"}
)


def _no_header_row(rows: list[Any], fmt: str) -> None:
    """Refuse positional rows whose first row may be the column names: only strings, over a
    column where a later row holds a non-string; or (JSON) the one row there is."""
    first = [json_cell(c) for c in rows[0]]
    if not first or not all(isinstance(c, str) and c.strip() for c in first):
        return
    later = [[json_cell(c) for c in r] for r in rows[1:]]
    clash = any(c is not None and not isinstance(c, str) for r in later for c in r[: len(first)])
    if clash or (not later and fmt == "json"):
        raise UnreadableResult(
            f"a first row of only strings ({first[:4]!r}) without column names: a header row "
            "sent with the rows, or data, cannot be told apart"
        )


def _content_text(body: list[Any]) -> str | None:
    """The text of a list of MCP content blocks (``{"type": "text", "text": ...}``): objects
    whose ``type`` is an MCP content type and whose keys are all a content block's; rows with
    columns ``type`` and ``text`` holding other types (or other columns) stay rows."""
    if not body or not all(
        isinstance(b, dict) and b.get("type") in BLOCK_TYPES and set(b) <= BLOCK_KEYS for b in body
    ):
        return None
    texts: list[str] = []
    for block in body:
        text = block.get("text")
        resource = block.get("resource")
        if not isinstance(text, str) and isinstance(resource, dict):
            text = resource.get("text")
        if not isinstance(text, str):
            return None
        texts.append(text)
    return "\n".join(texts)


def json_table(body: Any, read_text: ReadText, depth: int = 0) -> SqlTable | None:
    """The table in a JSON body (see the module docstring); ``None`` when there is none."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(body, str):
        stripped = body.strip()
        if stripped[:1] in "[{":
            try:
                return json_table(load_json(stripped), read_text, depth + 1)
            except json.JSONDecodeError:
                pass
        return read_text(body) if depth else None
    if isinstance(body, list):
        text = _content_text(body)
        if text is not None:
            return read_text(text)
        if body and all(isinstance(s, dict) and _statement(s) for s in body):
            return json_table(body[-1], read_text, depth + 1)
        return rows_table(body, None)
    if not isinstance(body, dict):
        return None
    _check_partial(body)
    table = _table_in(body, read_text, depth)
    if table is not None:
        _check_counts(body, table)
        table = _without_pandas_index(body, table)
    return table


def _without_pandas_index(body: dict[str, Any], table: SqlTable) -> SqlTable:
    """pandas' ``to_json(orient="table")`` without its row numbering: the ``primaryKey``
    ``["index"]`` column dropped when it is exactly ``0 .. n-1``, refused otherwise."""
    schema = body.get("schema")
    if not isinstance(schema, dict) or "pandas_version" not in schema:
        return table
    keys = schema.get("primaryKey")
    if keys is None:
        return table
    if keys != ["index"] or table.columns[:1] != ["index"]:
        raise UnreadableResult(f"a pandas table whose index is {keys!r}: a column or not?")
    if [r[0] for r in table.rows] != list(range(len(table.rows))):
        raise UnreadableResult("a pandas table whose index is not 0..n-1: a column or not?")
    return SqlTable(table.columns[1:], [r[1:] for r in table.rows], table.format)


def _table_in(body: dict[str, Any], read_text: ReadText, depth: int) -> SqlTable | None:
    names = _names(body)
    for key in ROW_KEYS:
        rows = body.get(key)
        if isinstance(rows, list) and (names is not None or key == "rows" or _all_rows(rows)):
            table = rows_table(rows, names)
            if table is not None:
                return table
    for key in ENVELOPES:
        if key in body:
            table = json_table(body[key], read_text, depth + 1)
            if table is not None:
                return table
    return None


def _statement(body: dict[str, Any]) -> bool:
    """One statement's result in a list of them (dbhub: ``{sql, rows, count}``)."""
    return isinstance(body.get("rows"), list)


def _all_rows(rows: list[Any]) -> bool:
    return bool(rows) and all(isinstance(r, dict | list) for r in rows)
