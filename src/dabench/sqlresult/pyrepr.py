"""Python reprs of query results, read without evaluating anything.

Servers that answer ``str(cursor.fetchall())`` (mcp-server-duckdb: ``[(Decimal('1.5'),
datetime.date(2025, 1, 1))]``, no column names) or ``str(list_of_dicts)`` (postgres-mcp:
``[{'n': 164}]``) are read by walking the expression's syntax tree over a closed grammar:
lists and tuples, dicts with string keys, literals, unary minus, and the calls
``Decimal('...')``, ``datetime.date(...)``, ``datetime.datetime(...)``, ``datetime.time(...)``,
``datetime.timedelta(...)`` and ``UUID('...')`` with literal arguments. Anything else is
refused; nothing is ever evaluated. ``...`` (a repr cut short by ``reprlib`` or by hand) and
a dict with the same key twice are refused too.

Decimals read as ``int``/``float`` like a text cell; dates and times as the ISO text DuckDB
prints (``2025-01-01``, ``2025-01-02 03:04:05``).
"""

from __future__ import annotations

import ast
import datetime as dt
import decimal
import uuid
from typing import Any

from dabench.sqlresult.json_shapes import rows_table
from dabench.sqlresult.model import SqlTable, UnreadableResult, number_or_text

MAX_CHARS = 5_000_000


class _Refused(ValueError):
    pass


def _args(node: ast.Call) -> tuple[list[Any], dict[str, Any]]:
    args = [_literal(a) for a in node.args]
    kwargs = {k.arg: _literal(k.value) for k in node.keywords if k.arg is not None}
    if len(kwargs) != len(node.keywords):
        raise _Refused("**kwargs")
    if any(not isinstance(a, int | str) for a in [*args, *kwargs.values()]):
        raise _Refused("a call with non-literal arguments")
    return args, kwargs


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise _Refused(type(node).__name__)


def _call(node: ast.Call) -> Any:
    name = _dotted(node.func).removeprefix("decimal.").removeprefix("uuid.")
    args, kwargs = _args(node)
    if name == "Decimal" and len(args) == 1 and not kwargs:
        try:
            value = decimal.Decimal(args[0])
        except decimal.InvalidOperation as exc:
            raise _Refused(f"Decimal({args[0]!r})") from exc
        return number_or_text(str(value)) if value.is_finite() else str(value)
    if name == "UUID" and len(args) == 1:
        return str(uuid.UUID(str(args[0])))
    kinds: dict[str, Any] = {
        "datetime.date": dt.date,
        "date": dt.date,
        "datetime.datetime": dt.datetime,
        "datetime": dt.datetime,
        "datetime.time": dt.time,
        "time": dt.time,
        "datetime.timedelta": dt.timedelta,
        "timedelta": dt.timedelta,
    }
    kind = kinds.get(name)
    if kind is None:
        raise _Refused(f"call of {name}")
    try:
        return str(kind(*args, **kwargs))
    except (TypeError, ValueError) as exc:
        raise _Refused(f"{name}: {exc}") from exc


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        raise _Refused("... (Ellipsis): a repr cut short")
    if isinstance(node, ast.Constant) and not isinstance(node.value, bytes | complex):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _literal(node.operand)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _Refused("unary sign on a non-number")
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _Refused("** in a dict")
        keys = [_literal(k) for k in node.keys if k is not None]
        if not all(isinstance(k, str) for k in keys):
            raise _Refused("a dict key that is not a string")
        if len(set(keys)) != len(keys):
            raise _Refused(f"duplicate key in a dict: {sorted(keys)}")
        return dict(zip(keys, (_literal(v) for v in node.values), strict=True))
    if isinstance(node, ast.Call):
        return _call(node)
    if isinstance(node, ast.Name) and node.id in ("nan", "inf"):
        return float(node.id)
    raise _Refused(type(node).__name__)


def looks_like_repr(text: str) -> bool:
    """True when ``text`` is bracketed like a Python list or tuple of rows."""
    stripped = text.strip()
    return stripped[:1] in "[(" and stripped[-1:] in "])"


def python_table(text: str) -> SqlTable:
    """The rows of a Python repr (see the module docstring)."""
    stripped = text.strip()
    if len(stripped) > MAX_CHARS:
        raise UnreadableResult(f"a Python repr of {len(stripped)} characters is too long to read")
    try:
        tree = ast.parse(stripped, mode="eval")
        value = _literal(tree.body)
    except (SyntaxError, _Refused, ValueError, RecursionError) as exc:
        raise UnreadableResult(f"not a Python literal of rows ({exc})") from exc
    if isinstance(tree.body, ast.Tuple) and not all(
        isinstance(e, ast.Tuple | ast.Dict) for e in tree.body.elts
    ):
        value = [value]  # one row printed as a bare tuple: (164,), ([1, 2],)
    if not isinstance(value, list):
        raise UnreadableResult("a Python value that is not a list of rows")
    table = rows_table(value, None, "python")
    if table is None:
        raise UnreadableResult("a Python list mixing rows of different kinds")
    return table
