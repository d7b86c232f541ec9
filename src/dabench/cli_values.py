"""Values of command-line options: comma-separated lists where an empty item is an error
(``--arms ,`` or ``--rates 0.5,,0.5`` is a typo, not "everything" or two rates)."""

from __future__ import annotations

from dabench.errors import UserInputError


def comma_list(value: str, flag: str, expected: str) -> list[str]:
    """The stripped items of ``value``; an empty one (or an empty list) is an error naming
    ``flag`` and what was ``expected``."""
    items = [item.strip() for item in value.split(",")]
    if not any(items):
        raise UserInputError(f"{flag} {value!r}: empty; expected {expected}")
    if not all(items):
        raise UserInputError(f"{flag} {value!r}: an empty item in the list; expected {expected}")
    return items
