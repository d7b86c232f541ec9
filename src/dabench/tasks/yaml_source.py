"""YAML with line numbers: compose a file (hardened, :mod:`dabench.safe_yaml`) and turn a
pydantic validation error into ``file:line: <label> field '<a.b>': <what was expected>`` lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from dabench import safe_yaml

NAME_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?$"
"""Experiment and arm names: letters (either case), digits, ``_ . -``; starts and ends with a
letter or digit (task ids are lower case: :data:`dabench.tasks.model.ID_PATTERN`)."""


def compose_file(path: Path) -> yaml.Node | None:
    """The YAML node tree of a file (``None`` when empty), through the limits and checks of
    :mod:`dabench.safe_yaml` (size, UTF-8, tags, complex keys, aliases, depth, duplicate keys)."""
    return safe_yaml.compose_file(path)


def node_data(node: yaml.Node, source: Path | str) -> Any:
    """The Python value of a node (safe constructors only); errors name ``source`` and line."""
    return safe_yaml.construct(node, str(source))


line_of = safe_yaml.line_of


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
    # A misspelt key is both unknown and, under its right name, missing: say unknown first.
    errors = sorted(exc.errors(), key=lambda e: e.get("type") != "extra_forbidden")
    for err in errors[:5]:
        # Drop union/model tags pydantic inserts into locations (``Task``, ``function-after``).
        raw = tuple(err.get("loc", ()))
        loc = [
            p
            for i, p in enumerate(raw)
            if not (isinstance(p, str) and (p[:1].isupper() or "[" in p or "-" in p))
            or raw[i + 1 : i + 2] == ("[key]",)  # a mapping key as written (``S1``)
        ]
        where = node_at(node, loc)
        field_name = ".".join(str(p) for p in [*prefix, *loc]) or "<item>"
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if err.get("type") == "missing":
            msg = "required field is missing"
        elif err.get("type") == "extra_forbidden":
            msg = "unknown field (not in the schema)"
        elif err.get("type") == "string_pattern_mismatch" and loc[-1:] in (["id"], ["name"]):
            either_case = (err.get("ctx") or {}).get("pattern") == NAME_PATTERN
            msg = (
                f"{err.get('input')!r:.60} is not a well-formed "
                f"{'name' if either_case else 'id'}: "
                f"{'letters' if either_case else 'lower-case letters'}, digits, "
                "'_', '.' and '-', starting and ending with a letter or digit"
            )
        elif "[key]" in raw:  # a mapping key that is not allowed
            msg = f"key {err.get('input')!r:.60}: {msg}"
        elif str(err.get("type", "")).endswith("_type") and "input" in err:
            msg = f"{msg}, got {err['input']!r:.60}"  # a strict type: k: "3", seed: 1.0
        lines.append(f"{path}:{line_of(where)}: {label} field '{field_name}': {msg}")
    return "\n".join(lines)
