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


def error_in_text(text: str) -> str | None:
    """The error line when ``text`` is a server's error answer, else ``None``."""
    if _ERROR_TEXT.match(text):
        return text.strip().splitlines()[0]
    return None


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
