"""Reading one pydantic record stored as a JSON file (manifests, locks, statistics), with
one clear error naming the file and the first invalid field."""

from __future__ import annotations

import json
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
    data = path.read_bytes()
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        newer = _newer_schema_version(data, model)
        if newer is not None:
            raise error(
                f"{path}: written by a newer dabench (schema_version {newer}); upgrade dabench "
                f"to read this {what}"
            ) from exc
        raise error(f"{path}: invalid {what}: {first_error(exc)}") from exc


def _newer_schema_version(data: bytes, model: type[BaseModel]) -> int | None:
    """The file's ``schema_version`` when it is newer than ``model`` knows (a model without
    the field is version 0: any stated version is newer)."""
    try:
        record = json.loads(data)
    except ValueError:
        return None
    version = record.get("schema_version") if isinstance(record, dict) else None
    field = model.model_fields.get("schema_version")
    known = field.default if field is not None and isinstance(field.default, int) else 0
    if isinstance(version, int) and not isinstance(version, bool) and version > known:
        return version
    return None
