"""Propose a result adapter from a probe query whose answer is known.

``target inspect`` sends :data:`PROBE_SQL` through the proposed ``sql`` binding; the answer
must read as one row ``(1, 'x')``. When the reader finds it on its own, no adapter is
needed. Otherwise a JSON result is searched for the rows (a list ``[{"a": 1, "b": "x"}]`` or
``[[1, "x"]]``, or an object with ``columns`` and ``rows``) and the JMESPath to them is
proposed; a text result is tried in each format. The proposal is verified by reading the
probe through it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dabench.errors import HarnessError
from dabench.sqlresult.adapter import ResultAdapter
from dabench.sqlresult.model import FORMATS, SqlTable
from dabench.sqlresult.read import read_sql_result

PROBE_SQL = "SELECT 1 AS a, 'x' AS b"
PROBE_ROWS = [[1, "x"]]


@dataclass(frozen=True)
class AdapterProposal:
    """What the probe showed: the adapter to use (``None``: the reader needs none)."""

    adapter: ResultAdapter | None
    read: str
    """How the probe's answer reads (through the adapter, if any), or why it does not."""
    ok: bool


def _is_probe(table: SqlTable) -> bool:
    return table.rows == PROBE_ROWS and (table.positional or table.columns == ["a", "b"])


def _quote(key: str) -> str:
    return key if key.isidentifier() else json.dumps(key)


def _paths(body: Any, path: str = "", depth: int = 0) -> list[str]:
    """JMESPath expressions of the values in ``body`` that hold the probe's rows."""
    if depth > 8:
        return []
    found = []
    rows = body.get("rows") if isinstance(body, dict) else None
    if isinstance(rows, list) and isinstance(body.get("columns"), list) and _holds_probe(rows):
        found.append(path or "@")
    if isinstance(body, list):
        if body and _holds_probe(body):
            found.append(path or "@")
        for i, item in enumerate(body[:20]):
            found += _paths(item, f"{path}[{i}]", depth + 1)
    elif isinstance(body, dict):
        for key, value in body.items():
            sub = f"{path}.{_quote(key)}" if path else _quote(key)
            found += _paths(value, sub, depth + 1)
    return found


def _holds_probe(rows: list[Any]) -> bool:
    if len(rows) != 1:
        return False
    row = rows[0]
    values = list(row.values()) if isinstance(row, dict) else row
    return isinstance(values, list) and [str(v) for v in values] == ["1", "x"]


def _through(text: str, adapter: ResultAdapter) -> SqlTable | None:
    try:
        table = read_sql_result(text, adapter, "probe")
    except HarnessError:
        return None
    return table if _is_probe(table) else None


def propose_adapter(text: str) -> AdapterProposal:
    """The adapter that reads the probe's answer ``text`` (see the module docstring)."""
    try:
        table = read_sql_result(text, None, "probe")
    except HarnessError as exc:
        why = str(exc)
    else:
        if _is_probe(table):
            return AdapterProposal(None, table.describe(), True)
        why = f"read as {table.describe()}, not the row (1, 'x')"
    try:
        body = json.loads(text)
    except json.JSONDecodeError:
        candidates = [ResultAdapter.model_validate({"format": f}) for f in FORMATS[1:]]
    else:
        candidates = [ResultAdapter(path=p, format="json") for p in _paths(body)]
    for adapter in candidates:
        read = _through(text, adapter)
        if read is not None:
            return AdapterProposal(adapter, read.describe(), True)
    return AdapterProposal(None, why, False)
