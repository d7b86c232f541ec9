"""A server's own error answer, recognised so it is a tool error and never data."""

from __future__ import annotations

import re
from typing import Any

_ERROR_TEXT = re.compile(
    r"^\s*(?:error|database error|query error|sql error|execution error|exception|"
    r"failed to execute(?: query)?|query failed|error executing (?:query|sql)|"
    r"error validating query)\b\s*[:\-]",
    re.IGNORECASE,
)
"""Text answers of the servers in the corpus: postgres-mcp ``Error: ...``, mcp-alchemy
``Error: (psycopg2.errors...)``, mcp-server-duckdb ``Database error: ...``, PostgreSQL's own
``ERROR:  ...``."""


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


def error_in_json(body: Any) -> str | None:
    """The error of a JSON error answer: ``{"success": false, "error": ...}`` (dbhub,
    mcp-server-motherduck), ``{"error": ...}`` or ``{"isError": true, ...}`` without rows."""
    if not isinstance(body, dict):
        return None
    error = body.get("error") or body.get("message") or body.get("detail")
    failed = body.get("success") is False or body.get("ok") is False or body.get("isError") is True
    has_rows = any(k in body for k in ("rows", "data", "result", "results", "values", "records"))
    if failed or (body.get("error") and not has_rows):
        if isinstance(error, dict):
            error = error.get("message") or error
        return str(error) if error else "the server reported failure"
    return None
