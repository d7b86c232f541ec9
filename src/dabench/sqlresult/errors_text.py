"""A server's own error answer, recognised so it is a tool error and never data."""

from __future__ import annotations

import re
from typing import Any

_ERROR_TEXT = re.compile(
    r"^\s*(?:(?:error|database error|query error|sql error|sqlite error|execution error|exception|"
    r"failed to (?:execute|run)(?: (?:the )?(?:query|sql|statement))?|query failed|"
    r"error executing (?:query|sql)|error validating query|an error occurred|"
    r"(?:invalid|bad) (?:query|sql|statement)|permission denied|"
    r"(?:[A-Za-z]+ ){1,3}error)\b\s*[:\-]"
    r"|[A-Za-z_][\w.]*(?:Error|Exception)\s*:"
    r"|traceback \(most recent call last\)"
    r"|only (?:select|read-only|read only)\b[^\n]*\b(?:allowed|permitted|supported)"
    r"|(?:the )?(?:query|statement|request) (?:timed out|was cancelled|was canceled)\b)",
    re.IGNORECASE,
)
"""Text answers of the servers in the corpus and of others seen: postgres-mcp ``Error:
...``, mcp-alchemy ``Error: (psycopg2.errors...)``, mcp-server-duckdb ``Database error:
...``, PostgreSQL's own ``ERROR:  ...``, DuckDB's ``Catalog Error:`` / ``Binder Error:`` /
``Parser Error:``, ``SQLite error:``, ``Failed to run query:``, a Python exception
(``sqlite3.OperationalError: ...``, a traceback), mcp-server-sqlite's ``Only SELECT queries
are allowed ...`` and ``Query timed out ...``. Anchored at the start of the text, so a table
holding such words in a cell is still data."""


_DBT_FAILED = re.compile(
    r"^\s*(?:--- (?:stdout|stderr) ---$|Timeout: dbt command|Command failed with exit code)",
    re.MULTILINE,
)
"""dbt-mcp's answer when the dbt command failed (it sets no ``isError``): the command's
output under ``--- stdout ---`` / ``--- stderr ---``, a timeout or a bare exit code."""
_DBT_ERROR_LINE = re.compile(r"^\s*(?:[A-Z][A-Za-z]* )*Error: .+$", re.MULTILINE)
"""The database's own message in dbt's output (``Catalog Error: Table ... does not exist``)."""
DBT_LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d(?:\.\d+)?\s\s")
"""A line of dbt's console log (``07:27:52  Running with dbt=1.11.16``)."""


def error_in_text(text: str) -> str | None:
    """The error line when ``text`` is a server's error answer, else ``None``."""
    if _ERROR_TEXT.match(text):
        return text.strip().splitlines()[0]
    if _DBT_FAILED.match(text):
        found = _DBT_ERROR_LINE.search(text)
        lines = text.strip().splitlines()
        return found.group(0).strip() if found else (lines[-1] if lines else text).strip()
    return None


def without_dbt_log(text: str) -> str:
    """``text`` without the dbt console log lines it opens with (``dbt show``'s output
    before its JSON: ``07:27:52  Running with dbt=...``)."""
    lines = text.lstrip().splitlines()
    if not lines or not DBT_LOG_LINE.match(lines[0]):
        return text
    rest = 0
    while rest < len(lines) and DBT_LOG_LINE.match(lines[rest]):
        rest += 1
    return "\n".join(lines[rest:])


_FAILED_STATUS = frozenset({"error", "failed", "failure", "fail", "aborted", "cancelled"})


def error_in_json(body: Any) -> str | None:
    """The error of a JSON error answer: ``{"success": false, "error": ...}`` (dbhub,
    mcp-server-motherduck), ``{"ok": false}``, ``{"isError": true, ...}``, ``{"status":
    "error" | "failed", ...}``, a non-empty ``errors`` list, or a non-empty ``error`` (even
    beside rows: ``{"rows": [], "error": ...}`` is a failure, not an empty table)."""
    if not isinstance(body, dict):
        return None
    errors = body.get("errors")
    if errors and isinstance(errors, list | dict | str):
        first = errors[0] if isinstance(errors, list) else errors
        if isinstance(first, dict):
            first = first.get("message") or first
        return str(first)
    error = body.get("error") or body.get("message") or body.get("detail")
    status = body.get("status")
    failed = (
        body.get("success") is False
        or body.get("ok") is False
        or body.get("isError") is True
        or (isinstance(status, str) and status.strip().lower() in _FAILED_STATUS)
    )
    if failed or (body.get("error") and not isinstance(body.get("error"), bool)):
        if isinstance(error, dict):
            error = error.get("message") or error
        return str(error) if error else "the server reported failure"
    return None
