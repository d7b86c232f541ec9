"""What a SQL tool's result reads as, and the two ways reading it fails."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from dabench.errors import HarnessError

ResultFormat = Literal[
    "json", "markdown", "box", "psql", "aligned", "csv", "tsv", "python", "vertical", "scalar"
]
"""The shapes a SQL tool's result text is read in (also the role map's ``format:`` hint)."""
FORMATS: tuple[str, ...] = (
    "json", "markdown", "box", "psql", "aligned", "csv", "tsv", "python", "vertical", "scalar"
)  # fmt: skip

SAMPLE_CHARS = 200
NULL_WORDS = frozenset({"", "null", "none", "nil", "<null>", "∅"})
_INT = re.compile(r"[+-]?(0|[1-9]\d*)")
_ISO_T = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?")
_FLOAT = re.compile(r"[+-]?(0|[1-9]\d*)?\.\d+([eE][+-]?\d+)?|[+-]?(0|[1-9]\d*)[eE][+-]?\d+")


@dataclass(frozen=True)
class SqlTable:
    """A SQL tool result as a table, with how it was read."""

    columns: list[str]
    rows: list[list[Any]]
    format: str
    """The shape it was read in (:data:`ResultFormat`, ``+adapter`` when a role map's
    adapter selected it)."""
    positional: bool = False
    """The server sent no column names: ``columns`` are ``column0``, ``column1``... and
    columns can only be matched by position."""
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line: format, size, and whether the columns are positional."""
        size = f"{len(self.rows)} row{'s' * (len(self.rows) != 1)} x {len(self.columns)} col"
        names = (
            "no column names (read by position)"
            if self.positional
            else "columns " + ", ".join(self.columns[:8]) + (" ..." * (len(self.columns) > 8))
        )
        return "; ".join([f"{self.format}: {size}", names, *self.notes])

    def as_tuple(self) -> tuple[list[str], list[list[Any]]]:
        """``(columns, rows)``."""
        return self.columns, self.rows


class UnreadableResult(HarnessError):
    """The result cannot be read unambiguously as a table: never graded, the episode is a
    harness error. The message quotes the first 200 characters."""


class SqlToolError(HarnessError):
    """The server answered with its own error text (``Error: ...``, ``Database error:
    ...``, ``{"success": false, "error": ...}``): a tool error, not data."""


def sample(text: str) -> str:
    """The first characters of ``text`` for an error message."""
    return text.strip()[:SAMPLE_CHARS]


def positional_columns(width: int) -> list[str]:
    """Names for columns the server did not name."""
    return [f"column{i}" for i in range(width)]


def number_or_text(value: str) -> Any:
    """A number when ``value`` reads as one in canonical form (no leading zeros, so codes
    such as ``"007"`` stay text), else ``value`` unchanged."""
    stripped = value.strip()
    if _INT.fullmatch(stripped):
        return int(stripped)
    if _FLOAT.fullmatch(stripped):
        return float(stripped)
    return value


def text_cell(text: str) -> Any:
    """A cell of a text table: ``None`` for NULL words, a number, else the stripped text (a
    timestamp in ISO ``T`` form as DuckDB prints it, ``2025-01-02 03:04:05``)."""
    value = text.strip()
    if value.lower() in NULL_WORDS:
        return None
    if _ISO_T.fullmatch(value):
        return value.replace("T", " ")
    return number_or_text(value)
