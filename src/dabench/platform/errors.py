"""Structured tool errors: what a refused or failed tool call returns to the agent."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ToolErrorBody:
    """The ``error`` object of a failed tool result: ``{"error": {code, message, hint}}``.

    A plain dataclass, not a pydantic model: the SQL worker process imports this module, and
    pydantic would add about 0.17 s of CPU to every worker's start (0.55 against 0.38 s)."""

    code: str
    """Stable machine-readable code, e.g. ``SESSION_REQUIRED`` or ``SQL_NOT_READ_ONLY``."""
    message: str
    """What went wrong, for a human or a model."""
    hint: str = ""
    """What to do instead."""


class ToolError(Exception):
    """Raised inside a tool to refuse the call with a structured error."""

    def __init__(self, code: str, message: str, hint: str = "") -> None:
        super().__init__(f"{code}: {message}")
        self.body = ToolErrorBody(code=code, message=message, hint=hint)

    @property
    def code(self) -> str:
        """The error code."""
        return self.body.code

    def payload(self) -> dict[str, Any]:
        """The JSON body returned as the tool result."""
        return {"error": self.error()}

    def error(self) -> dict[str, str]:
        """The ``error`` object alone: ``{code, message, hint}``."""
        return asdict(self.body)
