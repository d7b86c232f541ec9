"""``sequential.json``: where each arm of a ``--until-decided`` run stopped, and why."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

SEQUENTIAL_FILE = "sequential.json"


class ArmDecision(BaseModel):
    """Where one arm's comparison with the baseline stands."""

    model_config = ConfigDict(extra="forbid")

    arm: str
    decision: str
    """``better``, ``worse``, ``equivalent``, ``undecided`` (budget used up) or ``running``."""
    rounds: int
    """Rounds the arm ran (its attempts per task)."""
    low: float | None = None
    high: float | None = None
    """The confidence sequence for the paired delta after its last round (delta scale)."""
    history: list[tuple[float, float]] = Field(default_factory=list)
    """The sequence after each round."""


class SequentialRecord(BaseModel):
    """``sequential.json``: the stopping rule, where each arm stopped, and what it saved."""

    model_config = ConfigDict(extra="forbid")

    method: str = "hedged betting confidence sequence (Waudby-Smith & Ramdas 2024), per round"
    alpha: float
    min_delta: float | None
    baseline: str
    max_rounds: int
    rounds_run: int
    arms: list[ArmDecision]
    episodes_run: int
    episodes_fixed_design: int


def write_sequential(run_dir: Path, record: SequentialRecord) -> Path:
    """Write ``sequential.json`` into the run directory."""
    path = run_dir / SEQUENTIAL_FILE
    path.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path


def read_sequential(run_dir: Path) -> SequentialRecord | None:
    """``sequential.json`` of a run made with ``--until-decided``, else ``None``."""
    path = run_dir / SEQUENTIAL_FILE
    if not path.exists():
        return None
    return SequentialRecord.model_validate_json(path.read_text(encoding="utf-8"))
