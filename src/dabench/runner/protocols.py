"""The hook for S5 lifecycle protocols: a registered runner plays one protocol episode.

The harness core does not know how to play a protocol (teach, recall, promote...); the S5
module registers a :data:`ProtocolRunner` with :func:`register_protocol_runner`. Without one,
protocols in a selection are skipped and the run says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from dabench.agents.base import Agent, EpisodeTranscript
from dabench.journal.records import EpisodeStatus, StepRecord
from dabench.targets.base import Target
from dabench.tasks.model import Protocol


@dataclass
class ProtocolRequest:
    """One protocol episode to play."""

    run_id: str
    arm: str
    protocol: Protocol
    attempt: int
    target: Target
    agent: Agent


ProtocolRunner = Callable[
    [ProtocolRequest, EpisodeTranscript], Awaitable[tuple[EpisodeStatus, list[StepRecord]]]
]
"""Plays a protocol, writing tool calls and answers into the transcript; returns the status
and the step records (raise :class:`~dabench.errors.HarnessError` for infrastructure faults)."""

_RUNNER: list[ProtocolRunner] = []
_SLOTS: weakref.WeakKeyDictionary[Target, asyncio.Lock] = weakref.WeakKeyDictionary()


def protocol_slot(item: object, target: Target) -> AbstractAsyncContextManager[object]:
    """Protocol attempts on one target run one at a time (they reset and share the platform
    state); tasks pass freely. The runner takes it before the concurrency slots and the episode
    time limit, so waiting for it costs neither."""
    if not isinstance(item, Protocol):
        return contextlib.nullcontext()
    return _SLOTS.setdefault(target, asyncio.Lock())


def register_protocol_runner(runner: ProtocolRunner) -> None:
    """Register the protocol runner (replaces any previous one)."""
    _RUNNER[:] = [runner]


def protocol_runner() -> ProtocolRunner | None:
    """The registered protocol runner, if any."""
    if not _RUNNER:
        try:  # the S5 module registers itself on import, when it exists
            __import__("dabench.runner.protocol")
        except ImportError:
            return None
    return _RUNNER[0] if _RUNNER else None
