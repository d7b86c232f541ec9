"""What a SQL tool's result reads as, and the two ways reading it fails."""

from __future__ import annotations

import json
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
NULL_WORDS = frozenset({"", "null", "none", "nil", "<null>", "∅", "\\n"})
"""Cell texts read as NULL (lower-cased); ``\\N`` is the NULL of PostgreSQL's ``COPY`` text and
MySQL's batch output."""
_INT = re.compile(r"[+-]?(0|[1-9]\d*)")
_ISO_T = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?")
_FLOAT = re.compile(r"[+-]?(0|[1-9]\d*)?\.\d+([eE][+-]?\d+)?|[+-]?(0|[1-9]\d*)[eE][+-]?\d+")
_PLAIN_DECIMAL = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?")
"""A number sent as a JSON string: PostgreSQL's ``numeric``/``bigint`` as drivers send them
(``"1000"``, ``"1.50"``); ``"+7"``, ``"1e3"`` or ``"007"`` stay text."""

TRUNCATION = re.compile(
    r"\btruncat|\blimited to\b|\blimit(?:ed)? (?:of|at) \d|\brow limit\b"
    r"|\bmax(?:imum)?[ _]rows\b|\bmore (?:rows|results|records|data)\b|\b\d[\d,]* more\b"
    r"|\bshowing (?:the )?(?:first|top|only)\b"
    r"|\b(?:only|first) (?:the )?(?:first )?\d[\d,]* (?:of|rows?|results?|records?)\b"
    r"|\b\d[\d,]* of \d[\d,]* (?:rows?|results?|records?)\b|\brows? (?:were |was )?omitted\b"
    r"|\b(?:results?|output|rows?) (?:was |were |is |are |has been |have been )?"
    r"(?:cut|capped|clipped)\b|\bpartial results?\b",
    re.IGNORECASE,
)
"""A server's note that it sent only part of the result (``... 7 more rows``, ``Results
limited to 1000 rows``, ``Showing first 2 of 502 rows``, ``(truncated)``, ``Row limit of 1
reached``), found in the text around a table or in a JSON envelope's notes."""
PAGING = re.compile(
    TRUNCATION.pattern
    + r"|\blimit (?:was |has been )?reached\b|\bmore (?:available|to (?:come|fetch))"
    r"|\bnot (?:shown|displayed|returned|included)\b|\bexceed|\bnext page\b|\boffset \d"
    r"|\bpage \d[\d,]* of\b|\bof \d[\d,]*\b"
    r"|\b\d[\d,]*\s*/\s*\d[\d,]*\s+(?:rows?|results?|records?)\b"
    r"|\brows? \d[\d,]*\s*[-–]\s*\d|\btotal (?:matching|available)\b|\band \d[\d,]* others?\b"
    r"|\bmax(?:imum)? (?:results?|rows?|records?)\b|\breturning (?:the |only )?(?:first|top)\b"
    r"|\b(?:displaying|returning) (?:rows? )?\d",
    re.IGNORECASE,
)
""":data:`TRUNCATION` or a note that only part of the rows came (``Rows 1–2 of 2,500``, ``Page 1
of 1250``, ``Fetched 2 rows (more available)``, ``Max results (2) reached``): used on lines
that are not table rows (notes around a table, a CSV's last line, strings in a JSON
envelope), where a data value cannot be mistaken for it."""
COUNT_LINE = re.compile(
    r"^\W*(?:(?:results?|total|row count|query returned|returned|found|fetched|retrieved"
    r"|selected)\s*:?\s*)?"
    r"(\d[\d,]*)\s+(?:rows?|records?)\b",
    re.IGNORECASE,
)
"""A line stating the row count: ``(2 rows)``, ``2 rows returned``, ``Result: 2 rows``,
``1 row in set (0.00 sec)``."""


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


def partial(what: str) -> UnreadableResult:
    """The refusal of a result the server says it cut short."""
    return UnreadableResult(
        f"the result says it is cut short ({what}); refusing to read a partial result"
    )


def check_notes(lines: list[str], rows: int) -> None:
    """Refuse when a line around a table says the result was cut short, or states a row
    count other than the ``rows`` read."""
    for line in lines:
        note = line.strip()
        if PAGING.search(note):
            raise partial(repr(note[:120]))
        count = COUNT_LINE.match(note)
        if count is not None and int(count.group(1).replace(",", "")) != rows:
            raise miscount(int(count.group(1).replace(",", "")), repr(note[:120]), rows)


def miscount(said: int, where: str, rows: int) -> UnreadableResult:
    """The refusal of a result whose stated row count is not the rows read."""
    read = f"{rows} {'was' if rows == 1 else 'were'} read"
    return UnreadableResult(
        f"the result says {said} rows ({where}), {read}; refusing to read a partial result"
    )


def count_line(line: str) -> int | None:
    """The count of a line that is only a row count (``(2 rows)``, ``2 rows``)."""
    found = re.fullmatch(r"\(?\s*(\d[\d,]*)\s+rows?\s*\)?", line.strip(), re.IGNORECASE)
    return int(found.group(1).replace(",", "")) if found else None


class DuplicateKey(ValueError):
    """A JSON object or Python dict with the same key twice: which value is the cell?"""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


JSON = json.JSONDecoder(object_pairs_hook=_unique)
"""The decoder the reader uses: a key twice in one object is refused, not the last one kept."""


def load_json(text: str) -> Any:
    """``text`` as JSON (``json.JSONDecodeError`` when it is none); a duplicate key raises
    :class:`UnreadableResult`."""
    try:
        return JSON.decode(text.strip())
    except DuplicateKey as exc:
        raise UnreadableResult(f"duplicate key {exc} in a JSON object") from None


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


def json_number(value: str) -> Any:
    """A JSON string cell: a number when it is a plain decimal (see ``_PLAIN_DECIMAL``), else
    the string."""
    if _PLAIN_DECIMAL.fullmatch(value):
        return int(value) if _INT.fullmatch(value) else float(value)
    return value


def quoted_cell(value: str) -> Any:
    """A quoted CSV field: never NULL (``"NULL"`` is the text NULL, ``""`` the empty
    string), else read like a text cell."""
    if _ISO_T.fullmatch(value.strip()):
        return value.strip().replace("T", " ")
    return number_or_text(value) if value.strip() else value


def text_cell(text: str) -> Any:
    """A cell of a text table: ``None`` for NULL words, a number, else the stripped text (a
    timestamp in ISO ``T`` form as DuckDB prints it, ``2025-01-02 03:04:05``)."""
    value = text.strip()
    if value.lower() in NULL_WORDS:
        return None
    if _ISO_T.fullmatch(value):
        return value.replace("T", " ")
    return number_or_text(value)
