"""YAML with line numbers: compose a file, refuse duplicate keys, and turn a pydantic
validation error into ``file:line: <label> field '<a.b>': <what was expected>`` lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from dabench.errors import UserInputError

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader when available (ten times faster), with the same node marks."""


def compose_file(path: Path) -> yaml.Node | None:
    """The YAML node tree of a file (``None`` when empty); duplicate keys are refused."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserInputError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}" if mark is not None else ""
        raise UserInputError(f"{path}{at}: invalid YAML: {getattr(exc, 'problem', exc)}") from exc
    if root is not None:
        _check_duplicate_keys(root, path)
    return root


def node_data(node: yaml.Node) -> Any:
    """The Python value of a node (safe constructors only)."""
    constructor = yaml.SafeLoader("")
    try:
        return constructor.construct_document(node)
    finally:
        constructor.dispose()


def line_of(node: yaml.Node) -> int:
    """1-based line where a node starts."""
    return int(node.start_mark.line) + 1


def _check_duplicate_keys(node: yaml.Node, path: Path) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if key.value in seen:
                raise UserInputError(f"{path}:{line_of(key)}: key {key.value!r} is given twice")
            seen.add(key.value)
            _check_duplicate_keys(value, path)
    elif isinstance(node, yaml.SequenceNode):
        for child in node.value:
            _check_duplicate_keys(child, path)


def node_at(node: yaml.Node, loc: Sequence[int | str]) -> yaml.Node:
    """The deepest node along a pydantic error location (for a mapping entry, its key, so
    the line is where the field is named)."""
    current = node
    shown = node
    for part in loc:
        if isinstance(current, yaml.MappingNode):
            pair = next(((k, v) for k, v in current.value if k.value == part), None)
            if pair is None:
                return shown
            shown, current = pair
        elif isinstance(current, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(current.value):
                return shown
            shown = current = current.value[part]
        else:
            return shown
    return shown


def validation_message(
    exc: ValidationError, path: Path, node: yaml.Node, label: str, prefix: Sequence[int | str] = ()
) -> str:
    """One ``file:line: label field 'x.y': expected ...`` line per error (at most five)."""
    lines = []
    for err in exc.errors()[:5]:
        # Drop union/model tags pydantic inserts into locations (``Task``, ``function-after``).
        loc = [
            p
            for p in err.get("loc", ())
            if not (isinstance(p, str) and (p[:1].isupper() or "[" in p or "-" in p))
        ]
        where = node_at(node, loc)
        field_name = ".".join(str(p) for p in [*prefix, *loc]) or "<item>"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if err.get("type") == "missing":
            msg = "required field is missing"
        elif err.get("type") == "extra_forbidden":
            msg = "unknown field (not in the schema)"
        lines.append(f"{path}:{line_of(where)}: {label} field '{field_name}': {msg}")
    return "\n".join(lines)
