"""Output of the list commands (``tasks list``, ``history``, ``providers prices``):
``--format table|json|csv``; a table never truncates or wraps a cell when stdout is not a
terminal."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import typer
from rich.console import Console


class ListFormat(StrEnum):
    """How a list command prints its rows."""

    table = "table"
    json = "json"
    csv = "csv"


FORMAT_OPTION: Any = typer.Option(
    ListFormat.table,
    "--format",
    help="table (for reading), json (a list of objects) or csv (a header row, then rows).",
    case_sensitive=False,
)
"""The ``--format`` option every list command takes."""


def _plain(value: Any) -> str:
    return "" if value is None else str(value)


@dataclass(frozen=True)
class Column:
    """One column: its header, the row key, how the table shows a value, its alignment."""

    name: str
    key: str
    show: Callable[[Any], str] = _plain
    right: bool = False


def stdout_console() -> Console:
    """A stdout console: the terminal's width on a terminal; wide enough for any line when
    piped or redirected, so no table cell or sentence is truncated or wrapped."""
    if sys.stdout.isatty():
        return Console()
    return Console(width=100_000, no_color=True, highlight=False)


def stderr_console() -> Console:
    """A stderr console: the terminal's width on a terminal; when redirected (``2> log``, CI)
    wide enough that no message, path or table cell is wrapped or truncated."""
    if sys.stderr.isatty():
        return Console(stderr=True)
    return Console(stderr=True, width=100_000, highlight=False)


def emit_rows(
    columns: Sequence[Column],
    rows: Sequence[dict[str, Any]],
    fmt: ListFormat,
    *,
    title: str | None = None,
    footer: str | None = None,
) -> None:
    """Print ``rows`` (raw values by column key) as a table, JSON or CSV on stdout.

    JSON and CSV carry the raw values (numbers stay numbers, ``None`` is ``null`` / empty);
    the table shows each value through its column's ``show``. ``footer`` is printed under a
    table only (JSON and CSV stay machine-readable)."""
    from rich.table import Table
    from rich.text import Text

    if fmt is ListFormat.json:
        out = [{c.key: r.get(c.key) for c in columns} for r in rows]
        sys.stdout.write(json.dumps(out, indent=2, default=str) + "\n")
        return
    if fmt is ListFormat.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow([c.key for c in columns])
        for r in rows:
            writer.writerow([_plain(r.get(c.key)) for c in columns])
        return
    console = stdout_console()
    wide = not sys.stdout.isatty()
    table = Table(title=title)
    for c in columns:
        table.add_column(
            c.name, justify="right" if c.right else "left", no_wrap=wide, overflow="fold"
        )
    for r in rows:
        table.add_row(*(Text(c.show(r.get(c.key))) for c in columns))
    console.print(table)
    if footer:
        console.print(footer, soft_wrap=True, markup=False)
