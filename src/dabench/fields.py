"""Field types shared by every configuration model: names that are names, finite numbers.

A name (a profile's, an identity's) may end up in a path or a key, so it is one token of
letters, digits and ``_ . - @`` that starts with a letter or digit, holds no ``..`` and no path
separator. A time limit must be finite and positive (``.inf`` would never fire, ``0`` always).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints


def _no_dot_dot(value: str) -> str:
    if ".." in value:
        raise ValueError("must not contain '..'")
    return value


Name = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$", max_length=100),
    AfterValidator(_no_dot_dot),
]
"""One token usable in a path: letters, digits, ``_ . - @``, starting with a letter or digit,
no ``..``, at most 100 characters (``'../../etc'`` and ``' '`` are refused)."""

PositiveFinite = Annotated[float, Field(gt=0, allow_inf_nan=False)]
"""A finite, positive amount (a ratio)."""

Seconds = PositiveFinite
"""A time limit or interval: finite and positive."""

FiniteNonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""A finite, non-negative amount (a delay, a price, a threshold)."""
