"""The play state of a run directory (``play.json``): the plan, the platform, the open episode.

Every ``dabench play`` command is a separate process; they share this file. A command holds an
exclusive lock (``play.lock``) while it reads and rewrites the state, and the state is replaced
atomically, so two commands never interleave and a killed command leaves the last good state.
The state names task ids but holds no truth: no gold SQL, answers, tags or trap classes. It
holds no key either: the platform's admin key, its identity keys and the open episode's key
are in ``platform/keys.json`` (:class:`PlayKeys`, mode 0600, replaced atomically), which only
the play commands read.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dabench.errors import UserInputError
from dabench.journal.records import Message, ToolCall
from dabench.providers.base import ToolSpec
from dabench.recordfile import first_error
from dabench.secretfile import write_private

STATE_FILE = "play.json"
LOCK_FILE = "play.lock"
KEYS_FILE = "keys.json"
STATE_VERSION = 2


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlannedPlay(_State):
    """One episode of the plan."""

    episode_id: str
    """The opaque id shown to the agent (``ep-001``); it says nothing about the task."""
    task_id: str
    attempt: int


class PlatformServer(_State):
    """The run's detached server: the reference platform, or the play host that holds any
    other target (:mod:`dabench.play.host`)."""

    pid: int
    port: int
    work_dir: str
    health: dict[str, object] = Field(default_factory=dict)
    kind: Literal["reference", "host"] = "reference"


class OpenEpisode(_State):
    """The episode being played."""

    index: int
    """Position in the plan."""
    key: str
    """The journal key (``arm/task/attempt``)."""
    session: str
    """The platform session handle (``dps_...``)."""
    platform_episode: str
    """The platform's id of the episode (its key is bound to it; see :class:`PlayKeys`)."""
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
    experiment_dir: str | None = None
    """The directory of the experiment file the arm came from (``play start --experiment``):
    the target's relative paths resolve against it."""

    @property
    def remaining(self) -> int:
        """Episodes not yet opened."""
        return len(self.plan) - self.next_index


class PlayKeys(_State):
    """The keys of a play run's platform, kept out of ``play.json``."""

    admin_key: str
    """The reference platform's admin key, or the play host's token."""
    keys: dict[str, str]
    """Identity -> static API key (the harness's own connections)."""
    episode_keys: dict[str, str] = Field(default_factory=dict)
    """Identity -> the open episode's key (revoked when the episode is recorded)."""


def keys_path(work_dir: Path) -> Path:
    """``<platform work dir>/keys.json``."""
    return work_dir / KEYS_FILE


def read_keys(work_dir: Path) -> PlayKeys:
    """The platform's keys; a clear error when the file is missing or invalid."""
    path = keys_path(work_dir)
    try:
        return PlayKeys.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise UserInputError(f"{path}: cannot read the platform's keys: {exc}") from exc
    except ValidationError as exc:
        raise UserInputError(f"{path}: invalid keys file: {first_error(exc)}") from exc


def write_keys(work_dir: Path, keys: PlayKeys) -> None:
    """Replace the keys file atomically, mode 0600 from its first byte."""
    write_private(keys_path(work_dir), keys.model_dump_json(indent=2).encode("utf-8"))


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
    write_private(state_path(run_dir), state.model_dump_json(indent=2).encode("utf-8"))


@contextlib.contextmanager
def locked(run_dir: Path, *, start: bool = False) -> Iterator[None]:
    """Hold the run's play lock (commands on one run directory run one at a time). Only
    ``start`` creates the directory, and a start that fails removes what it created (the
    directory when it was new, else the lock file); any other command on a directory that is
    not a play run fails before creating anything."""
    if not start:
        read_state(run_dir)  # not a play run: its error, and nothing written
    lock = run_dir / LOCK_FILE
    new_dir, new_lock = not run_dir.exists(), not lock.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    except BaseException:
        if start and new_dir:
            shutil.rmtree(run_dir, ignore_errors=True)
        elif start and new_lock:
            lock.unlink(missing_ok=True)
        raise
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
