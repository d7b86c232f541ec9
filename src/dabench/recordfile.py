"""Reading one pydantic record stored as a JSON file (manifests, locks, statistics), with
one clear error naming the file and the first invalid field."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from dabench.errors import DabenchError, UserInputError

M = TypeVar("M", bound=BaseModel)


def first_error(exc: ValidationError) -> str:
    """``loc: msg`` of the first error of a validation failure (``<record>`` for the root)."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ())) or "<record>"
    return f"{loc}: {err.get('msg', 'invalid')}"


def read_record_file(
    path: Path,
    model: type[M],
    *,
    what: str,
    missing: str,
    error: type[DabenchError] = UserInputError,
) -> M:
    """Validate the JSON file ``path`` as ``model``. A missing file raises ``error(missing)``;
    an invalid one ``error("PATH: invalid WHAT: LOC: MSG")``."""
    if not path.exists():
        raise error(missing)
    try:
        return model.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise error(f"{path}: invalid {what}: {first_error(exc)}") from exc
