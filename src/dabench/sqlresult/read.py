"""Read a SQL tool's result text as a table, or fail loudly (see the package docstring)."""

from __future__ import annotations

import json
import re
from typing import Any

from dabench.sqlresult.adapter import ResultAdapter
from dabench.sqlresult.errors_text import error_in_json, error_in_text, without_dbt_log
from dabench.sqlresult.json_envelope import check_envelope
from dabench.sqlresult.json_shapes import json_table
from dabench.sqlresult.model import (
    JSON,
    TRUNCATION,
    DuplicateKey,
    SqlTable,
    SqlToolError,
    UnreadableResult,
    load_json,
    partial,
    positional_columns,
    sample,
    text_cell,
)
from dabench.sqlresult.one_column import one_column
from dabench.sqlresult.pyrepr import looks_like_repr, python_table
from dabench.sqlresult.text_tables import text_table
from dabench.sqlresult.vertical import EMPTY, looks_vertical, vertical_table

_SCALAR_TEXT = re.compile(
    r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|\d{4}-\d\d-\d\d([ T]\d\d:\d\d(:\d\d(\.\d+)?)?)?"
    r"|true|false|null|none",
    re.IGNORECASE,
)
_TEXT_FORMATS = frozenset({"markdown", "box", "psql", "aligned", "csv", "tsv"})
_BLANK_LINES = re.compile(r"\A(?:[ \t]*\r?\n)+")
_SIDE_BLOCK_KEYS = frozenset({"info", "error", "errors", "warning", "warnings", "message"})
"""The keys a JSON block beside the rows may have (mcp-metricflow's ``{"info": ..., "error":
null}``); its strings must not say the rows are partial."""


def read_sql_result(
    text: str, adapter: ResultAdapter | None = None, who: str = "oracle"
) -> SqlTable:
    """The table in a SQL tool's result ``text``.

    Raises :class:`SqlToolError` when the text is the server's own error answer and
    :class:`UnreadableResult` (quoting the first 200 characters) when it cannot be read
    unambiguously; both are harness errors, so such a result is never graded."""
    try:
        return _read(text, adapter)
    except SqlToolError as exc:
        raise SqlToolError(f"{who}: the SQL tool answered with an error: {exc}") from None
    except UnreadableResult as exc:
        raise UnreadableResult(
            f"{who}: unreadable SQL tool result ({exc}): {sample(text)}"
        ) from None


def _trimmed(text: str) -> str:
    """``text`` without a byte order mark, blank lines around it and trailing spaces, the
    first line's indentation kept (an aligned table's columns are positions)."""
    return _BLANK_LINES.sub("", text.removeprefix("\ufeff")).rstrip()


def _read(text: str, adapter: ResultAdapter | None) -> SqlTable:
    stripped = _trimmed(text)
    if not stripped:
        raise UnreadableResult("empty text")
    error = error_in_text(stripped)
    if error is None:
        stripped = _trimmed(without_dbt_log(stripped))
        if not stripped:
            raise UnreadableResult("only dbt log lines")
    if error is not None:
        raise SqlToolError(error)
    if adapter is not None and (adapter.path is not None or adapter.format is not None):
        return _adapted(stripped, adapter)
    return _guess(stripped)


def _parse_json(text: str) -> tuple[bool, Any]:
    try:
        return True, load_json(text)
    except json.JSONDecodeError:
        return False, None


def _scalar(value: Any) -> SqlTable:
    return SqlTable(positional_columns(1), [[value]], "scalar", positional=True)


def _json_documents(text: str) -> list[Any] | None:
    """Two or more JSON objects or arrays one after the other (an MCP result of several text
    blocks, joined by newlines), else ``None``."""
    docs: list[Any] = []
    text = text.strip()
    at = 0
    while at < len(text):
        try:
            doc, end = JSON.raw_decode(text, at)
        except json.JSONDecodeError:
            return None
        except DuplicateKey as exc:
            raise UnreadableResult(f"duplicate key {exc} in a JSON object") from None
        if not isinstance(doc, dict | list):
            return None
        docs.append(doc)
        at = end
        while at < len(text) and text[at].isspace():
            at += 1
    return docs if len(docs) > 1 else None


def _from_documents(docs: list[Any]) -> SqlTable:
    """A result of several JSON blocks, as mcp-metricflow's ``query_tool`` sends
    (``{"info": ..., "error": ...}`` then the rows): an error in any block, or a block whose
    text is an error answer, is the tool's error; the table is the one block that is a list
    (two lists are two result sets: refused)."""
    for doc in docs:
        error = error_in_json(doc)
        texts = doc.values() if isinstance(doc, dict) else ()
        error = error or next(
            (e for v in texts if isinstance(v, str) and (e := error_in_text(v)) is not None), None
        )
        if error is not None:
            raise SqlToolError(error)
    lists = [d for d in docs if isinstance(d, list)]
    if not lists:
        raise UnreadableResult("several JSON blocks and none is a list of rows")
    if len(lists) > 1:
        raise UnreadableResult(f"{len(lists)} JSON lists: several result sets, not one table")
    table = (
        SqlTable([], [], "json", positional=False, notes=["no rows"])
        if not lists[-1]
        else _from_json(lists[-1])
    )
    for doc in docs:
        if isinstance(doc, dict):
            unknown = sorted(set(doc) - _SIDE_BLOCK_KEYS)
            if unknown:
                raise UnreadableResult(
                    f"a JSON block beside the rows with keys {unknown[:4]}: more rows, or a "
                    "note about them, cannot be ruled out"
                )
            check_envelope(doc, frozenset(), len(table.rows))
    return table


def _guess_inner(text: str) -> SqlTable:
    """Text found inside JSON (a content block's text): an error answer there is the tool's
    error too."""
    error = error_in_text(text)
    if error is not None:
        raise SqlToolError(error)
    return _guess(_trimmed(text))


def _guess(text: str) -> SqlTable:
    parsed, body = _parse_json(text)
    if parsed:
        return _from_json(body)
    docs = _json_documents(text)
    if docs is not None:
        return _from_documents(docs)
    if looks_like_repr(text):
        return python_table(text)
    if EMPTY.match(text):
        return SqlTable([], [], "vertical", positional=True, notes=["no rows"])
    if looks_vertical(text):
        return vertical_table(text)
    table = text_table(text) or one_column(text)
    if table is not None:
        return table
    if "\n" not in text and _SCALAR_TEXT.fullmatch(text.strip()):
        return _scalar(text_cell(text))
    notice = next((line for line in text.splitlines() if TRUNCATION.search(line)), None)
    if notice is not None:
        raise partial(f"{notice.strip()[:120]!r}, in a text of no known table shape")
    raise UnreadableResult("no known table shape")


def _from_json(body: Any) -> SqlTable:
    error = error_in_json(body)
    if error is not None:
        raise SqlToolError(error)
    if body is None or isinstance(body, bool | int | float):
        return _scalar(body)
    table = json_table(body, _guess_inner)
    if table is None:
        raise UnreadableResult("JSON with no table in it")
    return table


def _adapted(text: str, adapter: ResultAdapter) -> SqlTable:
    fmt = adapter.format
    if adapter.path is not None:
        parsed, body = _parse_json(text)
        if not parsed:
            raise UnreadableResult(f"result.path {adapter.path!r} needs a JSON result")
        error = error_in_json(body)
        if error is not None:
            raise SqlToolError(error)
        selected = adapter.select(body)
        if selected is None:
            raise UnreadableResult(f"result.path {adapter.path!r} selects nothing")
        if isinstance(selected, str):
            return _tag(_in_format(selected, fmt) if fmt else _guess_inner(selected))
        table = (
            json_table(selected, _guess_inner) if not isinstance(selected, int | float) else None
        )
        if table is None:
            if isinstance(selected, int | float) and fmt in (None, "scalar"):
                return _tag(_scalar(selected))
            raise UnreadableResult(f"result.path {adapter.path!r} selects no table")
        return _tag(table)
    assert fmt is not None
    return _tag(_in_format(text, fmt))


def _tag(table: SqlTable) -> SqlTable:
    return SqlTable(table.columns, table.rows, f"{table.format}+adapter", table.positional)


def _in_format(text: str, fmt: str) -> SqlTable:
    """``text`` read only as ``fmt``."""
    stripped = _trimmed(text)
    if fmt == "json":
        parsed, body = _parse_json(stripped)
        if not parsed:
            raise UnreadableResult("the role map says json, the result is not JSON")
        return _from_json(body)
    if fmt == "python":
        return python_table(stripped)
    if fmt == "vertical":
        if EMPTY.match(stripped):
            return SqlTable([], [], "vertical", positional=True, notes=["no rows"])
        return vertical_table(stripped)
    if fmt == "scalar":
        if "\n" in stripped:
            raise UnreadableResult("the role map says scalar, the result has several lines")
        parsed, body = _parse_json(stripped)
        return _scalar(body if parsed else text_cell(stripped))
    table = text_table(stripped) if fmt in _TEXT_FORMATS else None
    if table is None or table.format != fmt:
        found = table.format if table is not None else "no table"
        raise UnreadableResult(f"the role map says {fmt}, the result reads as {found}")
    return table
