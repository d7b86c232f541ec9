"""One reader for the results of SQL tools, used by everything that reads them: the oracle,
the probe, ``target inspect --check``, replay and the MCP target (which marks a server's
error answer as a tool error).

It reads JSON (row objects, ``{columns, rows}``, envelopes such as dbhub's
``data.statements[i].rows``, MCP content blocks and ``structuredContent``, numbers sent as
strings), markdown, psql, aligned and box tables, CSV and TSV, Python reprs (read without
evaluating: lists of tuples or dicts, ``Decimal``, ``datetime``), vertical records
(``1. row`` / ``col: val`` / ``Result: N rows``) and scalars. Where the server sends no
column names, the table says so (:attr:`SqlTable.positional`). A server's own error answer is
a :class:`SqlToolError`; anything that cannot be read unambiguously, including a table the
server cut short, is an :class:`UnreadableResult` quoting the text. Both are
:class:`~dabench.errors.HarnessError`: an unreadable result is never graded, and never read
as an empty table.

A role map's ``sql`` binding may carry a :class:`ResultAdapter` (a JMESPath ``path`` and a
``format``) for servers the reader cannot guess. This package depends on nothing of
dabench's but :mod:`dabench.errors`, so every layer may import it.
"""

from __future__ import annotations

from dabench.sqlresult.adapter import ResultAdapter
from dabench.sqlresult.errors_text import error_in_json, error_in_text
from dabench.sqlresult.model import FORMATS, ResultFormat, SqlTable, SqlToolError, UnreadableResult
from dabench.sqlresult.read import read_sql_result

__all__ = [
    "FORMATS",
    "ResultAdapter",
    "ResultFormat",
    "SqlTable",
    "SqlToolError",
    "UnreadableResult",
    "error_in_json",
    "error_in_text",
    "read_sql_result",
]


def server_error(text: str) -> str | None:
    """The server's error line when a SQL tool's result ``text`` is its own error answer."""
    line = error_in_text(text)
    if line is not None:
        return line
    stripped = text.strip()
    if stripped[:1] != "{":
        return None
    import json

    try:
        return error_in_json(json.loads(stripped))
    except json.JSONDecodeError:
        return None
