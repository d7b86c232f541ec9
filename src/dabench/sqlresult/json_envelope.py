"""Paging, truncation and row-count signals in a JSON envelope, found by the shape of their
names rather than a list of spellings.

Every key of an envelope is looked at, in nested objects too (``meta.truncated``,
``stats.rows_total``, ``pagination.total_pages``), except the rows themselves and the
envelopes the table reader opens (which are checked when opened). A key is normalised (lower
case, no ``_``/``-``) and refused when:

- it flags a part: ``truncat*``, ``partial``, ``incomplete``, ``has_more``/``has_next*``,
  ``more``, ``*limit_reached``/``limited`` that is true (``true``, ``"true"``, ``1``);
- it says the result is not complete: ``complete``/``is_complete``/``*complete`` false;
- it points to more rows: ``next*``, ``cursor*``, ``*token``, ``page*``, ``pagination``,
  ``paging`` with any non-empty value;
- it states a row count (``total*``, ``*count``, ``rows*``/``*rows``, ``num_rows``...) as an
  integer or an integer string that is not the number of rows read;
- a string anywhere in it reads as a partial-result note (:data:`~dabench.sqlresult.model.PAGING`).
"""

from __future__ import annotations

import re
from typing import Any

from dabench.sqlresult.model import PAGING, miscount, partial

_FLAG = re.compile(
    r"(is)?(truncat\w*|partial\w*|incomplete|hasmore|hasnext\w*|more|moreavailable|"
    r"\w*limitreached|limited|resultstruncated|exceed\w*)"
)
_COMPLETE = re.compile(r"(is)?\w*complete(d)?|done|finished")
_NEXT = re.compile(r"next\w*|\w*cursor\w*|\w*token|page\w*|pagination|paging|continuation\w*")
_COUNT = re.compile(
    r"\w*total\w*|\w*count|rowcount\w*|rows\w*|\w*rows|numrows|nrows|n|size|length|returned"
)
_NOT_COUNT = re.compile(r"\w*(col|field|byte|time|ms|sec|duration|affected|page|cost)\w*")
_STATEMENT = frozenset({"sql", "query", "statement", "querytext", "sqlquery", "sqltext"})
"""Keys holding the statement itself: ``OFFSET 5`` there is the query's, not a note."""
_TRUE = (True, 1, "true", "True", "TRUE", "yes", "1")
_FALSE = (False, 0, "false", "False", "FALSE", "no", "0")


def _norm(key: str) -> str:
    return re.sub(r"[_\-\s]", "", key).lower()


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\d[\d,]*", value.strip()):
        return int(value.replace(",", ""))
    return None


def check_envelope(body: dict[str, Any], skip: frozenset[str], rows: int | None) -> None:
    """Refuse ``body`` when a key or string outside ``skip`` (the keys holding the rows and
    the envelopes opened separately) signals a partial result; ``rows``: the number of rows
    read, compared with any row count (``None``: no table here, counts are not compared)."""
    for key, value in body.items():
        if key in skip:
            continue
        _check_pair(key, value, rows, 0)


def _check_pair(key: str, value: Any, rows: int | None, depth: int) -> None:
    name = _norm(key)
    if _FLAG.fullmatch(name) and value in _TRUE and value is not False:
        raise partial(f"{key}: {value!r}")
    if _COMPLETE.fullmatch(name) and value in _FALSE and value is not True:
        raise partial(f"{key}: {value!r}")
    if _NEXT.fullmatch(name) and value not in (None, "", False, [], {}, 0):
        raise partial(f"{key}: {str(value)[:40]!r}")
    count = _integer(value)
    if (
        rows is not None
        and count is not None
        and _COUNT.fullmatch(name)
        and not _NOT_COUNT.fullmatch(name)
        and count != rows
    ):
        raise miscount(count, key, rows)
    _check_value(key, value, rows, depth)


def _check_value(key: str, value: Any, rows: int | None, depth: int) -> None:
    if isinstance(value, str) and _norm(key) not in _STATEMENT and PAGING.search(value):
        raise partial(f"{key}: {value[:120]!r}")
    if depth > 4:
        return
    if isinstance(value, dict):
        for inner, item in value.items():
            _check_pair(inner, item, rows, depth + 1)
    elif isinstance(value, list):
        for item in value[:50]:
            _check_value(key, item, rows, depth + 1)
