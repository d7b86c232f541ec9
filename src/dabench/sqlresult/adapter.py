"""The declarative result adapter of a role map's ``sql`` binding (``result:``).

For a server whose result the reader does not find on its own::

    sql: {tool: run_query, result: {path: "payload.batches[-1].tuples", format: json}}

``path`` is a `JMESPath <https://jmespath.org>`_ expression into the JSON result that
selects the rows (a list of objects or lists), a ``{columns, rows}`` object, or a string
holding the table as text; ``format`` says which shape to read (the text's, or ``json``) and
turns off guessing. Either may be given alone.
"""

from __future__ import annotations

from typing import Any

import jmespath
import jmespath.exceptions
from pydantic import BaseModel, ConfigDict, field_validator

from dabench.sqlresult.model import ResultFormat


class ResultAdapter(BaseModel):
    """Where the table is in a SQL tool's result and in which shape."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str | None = None
    """A JMESPath expression into the JSON result selecting the table."""
    format: ResultFormat | None = None
    """The shape to read (no guessing): json, markdown, box, psql, aligned, csv, tsv, python,
    vertical or scalar."""

    @field_validator("path")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                jmespath.compile(value)
            except jmespath.exceptions.JMESPathError as exc:
                raise ValueError(f"not a JMESPath expression: {value!r} ({exc})") from exc
        return value

    def select(self, body: Any) -> Any:
        """The value ``path`` selects in ``body`` (``body`` itself without a path)."""
        return body if self.path is None else jmespath.search(self.path, body)
