"""Versioned rubric files (``dabench/judge/rubric/<version>.yaml``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from dabench.defaults import DEFAULT_RUBRIC_VERSION as DEFAULT_RUBRIC_VERSION
from dabench.errors import UserInputError
from dabench.judge.versioned import versioned_file

RUBRIC_DIR = Path(__file__).resolve().parent / "rubric"


class RubricItem(BaseModel):
    """One yes/no rubric item."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    applies_to: str
    """The trap class (or ``abstain`` / ``adversarial``) the item checks."""
    question: str
    yes_when: str
    no_when: str

    def render(self) -> str:
        """The item as the judge prompt lists it."""
        return (
            f"- id: {self.id}\n  question: {self.question}\n"
            f"  yes when: {self.yes_when}\n  no when: {self.no_when}"
        )


class Rubric(BaseModel):
    """A versioned set of rubric items."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    items: list[RubricItem]

    def item(self, item_id: str) -> RubricItem:
        """The item with this id; a clear error names the version and the known ids."""
        for item in self.items:
            if item.id == item_id:
                return item
        known = ", ".join(i.id for i in self.items)
        raise UserInputError(f"rubric {self.version}: no item {item_id!r} (known: {known})")


def load_rubric(version_or_path: str | Path = DEFAULT_RUBRIC_VERSION) -> Rubric:
    """Load a shipped rubric version (``v1``) or a rubric YAML file."""
    path = versioned_file(version_or_path, RUBRIC_DIR, ".yaml", "rubric")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        rubric = Rubric.model_validate(data)
    except (yaml.YAMLError, ValidationError) as exc:
        raise UserInputError(f"{path}: invalid rubric: {exc}") from exc
    ids = [i.id for i in rubric.items]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise UserInputError(f"{path}: duplicate rubric item id(s) {', '.join(duplicates)}")
    return rubric


def calibration_summary(rubric_version: str, judge_model: str) -> dict[str, Any] | None:
    """Agreement and kappa from ``rubric/<version>.calibration.json`` when that report was
    made with ``judge_model`` (written by ``dabench judge calibrate``), else ``None``."""
    path = RUBRIC_DIR / f"{rubric_version}.calibration.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("judge") != judge_model:
        return None
    keys = ("judge", "n_items", "agreement", "kappa", "claim_agreement", "flip_rate", "created_at")
    return {k: data.get(k) for k in keys}
