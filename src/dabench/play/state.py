"""The play state of a run directory (``play.json``): the plan, the platform, the open episode.

Every ``dabench play`` command is a separate process; they share this file. A command holds an
exclusive lock (``play.lock``) while it reads and rewrites the state, and the state is replaced
atomically, so two commands never interleave and a killed command leaves the last good state.
The state names task ids but holds no truth: no gold SQL, answers, tags or trap classes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dabench.errors import UserInputError
from dabench.journal.records import Message, ToolCall
from dabench.providers.base import ToolSpec
from dabench.recordfile import first_error

STATE_FILE = "play.json"
LOCK_FILE = "play.lock"
STATE_VERSION = 1


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlannedPlay(_State):
    """One episode of the plan."""

    episode_id: str
    """The opaque id shown to the agent (``ep-001``); it says nothing about the task."""
    task_id: str
    attempt: int


class PlatformServer(_State):
    """The detached reference platform of the run."""

    pid: int
    port: int
    admin_key: str
    keys: dict[str, str]
    """Identity -> API key."""
    work_dir: str
    health: dict[str, object] = Field(default_factory=dict)


class OpenEpisode(_State):
    """The episode being played."""

    index: int
    """Position in the plan."""
    key: str
    """The journal key (``arm/task/attempt``)."""
    session: str
    """The platform session handle (``dps_...``)."""
    identity: str = "default"
    turn: int = 0
    turns: int = 1
    budget: int
    budget_hit: bool = False
    """A call beyond the budget was refused: the episode ends as ``budget_exhausted``."""
    tools: list[ToolSpec] = Field(default_factory=list)
    started_at: datetime
    messages: list[Message] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    answers: list[str] = Field(default_factory=list)


class PlayState(_State):
    """Everything the play commands of one run share."""

    version: int = STATE_VERSION
    run_id: str
    arm: str
    plan: list[PlannedPlay]
    next_index: int = 0
    server: PlatformServer | None = None
    open: OpenEpisode | None = None
    skipped: list[str] = Field(default_factory=list)
    """Selected items play cannot run (S5 lifecycle protocols), by id."""
    finished: bool = False

    @property
    def remaining(self) -> int:
        """Episodes not yet opened."""
        return len(self.plan) - self.next_index


def state_path(run_dir: Path) -> Path:
    """``<run_dir>/play.json``."""
    return run_dir / STATE_FILE


def read_state(run_dir: Path) -> PlayState:
    """The run's play state; a clear error when the directory is not a play run."""
    path = state_path(run_dir)
    if not path.exists():
        raise UserInputError(
            f"{run_dir}: not a play run (no {STATE_FILE}); start one with "
            f"`dabench play start --run {run_dir}`"
        )
    try:
        return PlayState.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        raise UserInputError(f"{path}: invalid play state: {first_error(exc)}") from exc


def write_state(run_dir: Path, state: PlayState) -> None:
    """Replace the state atomically (write, fsync, rename); readable by the owner only."""
    path = state_path(run_dir)
    tmp = path.with_suffix(".json.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, state.model_dump_json(indent=2).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


@contextlib.contextmanager
def locked(run_dir: Path) -> Iterator[None]:
    """Hold the run's play lock (commands on one run directory run one at a time)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
