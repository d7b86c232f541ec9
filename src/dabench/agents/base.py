"""The agent interface and the transcript it writes into.

The runner owns an :class:`EpisodeTranscript` and hands it to :meth:`Agent.run`; the agent
appends messages, tool calls, answers and usage as it goes, so an episode stopped by its
time limit still has everything up to that point. :class:`ToolRecorder` is the one place a
tool call is made and recorded (index, turn, session, arguments, result, latency).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dabench.journal.records import (
    EpisodeStatus,
    Message,
    TargetRound,
    TokenUsage,
    ToolCall,
    TtftSource,
)
from dabench.roles import ToolRoles
from dabench.targets.base import Target, TargetSession
from dabench.tasks.model import Task


@dataclass
class EpisodeTranscript:
    """Everything an episode produced so far."""

    messages: list[Message] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)
    cost_usd: float | None = None
    cost_source: str = "none"
    sessions: list[str] = field(default_factory=list)
    episode: str | None = None
    """The target's id of the episode when it bound keys to it (the reference platform):
    then every call of the episode's keys, in any session, is the episode's."""
    ttft_ms: float | None = None
    """Time to first token of the episode, where the target streams."""
    ttft_source: TtftSource | None = None
    """``measured`` by dabench or ``reported`` by the target."""
    usage_known: bool = True
    """False once a model call or round did not report its usage (tokens then unknown)."""
    rounds: list[TargetRound] = field(default_factory=list)
    """Target-side rounds, for targets that run their own agent loop."""
    transient_retries: int = 0
    """Transient provider or target failures retried so far."""

    def add_usage(self, usage: TokenUsage, cost: float | None, cost_source: str) -> None:
        """Accumulate one model call's tokens and cost."""
        self.usage = TokenUsage(
            input=self.usage.input + usage.input,
            output=self.usage.output + usage.output,
            cache_read=self.usage.cache_read + usage.cache_read,
            cache_write=self.usage.cache_write + usage.cache_write,
        )
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost
            self.cost_source = cost_source

    def sent_calls(self, sessions: list[str] | None = None) -> int:
        """Tool calls that reached the target (in ``sessions`` when given; in any session of
        a key-bound episode otherwise)."""
        if sessions is None and self.episode is not None:
            return sum(1 for c in self.tool_calls if c.session)
        wanted = set(sessions if sessions is not None else self.sessions)
        return sum(1 for c in self.tool_calls if c.session and c.session in wanted)


class ToolRecorder:
    """Makes tool calls on a session and records each one in the transcript."""

    def __init__(self, transcript: EpisodeTranscript) -> None:
        self.transcript = transcript
        self.roles: ToolRoles | None = None
        """The role map of the target last opened (each call records its tool's roles)."""

    async def open(self, target: Target, identity: str = "default") -> TargetSession:
        """Open a target session and remember its handle and the target's role map."""
        self.roles = target.tool_roles
        session = await target.open_session(identity)
        self.transcript.sessions.append(session.handle)
        return session

    async def call(
        self, session: TargetSession, name: str, arguments: dict[str, Any], turn: int = 0
    ) -> ToolCall:
        """Call a tool and record it (an infrastructure failure propagates)."""
        outcome = await session.call(name, arguments)
        record = ToolCall(
            index=len(self.transcript.tool_calls),
            turn=turn,
            session=session.handle,
            name=name,
            arguments=arguments,
            result=outcome.text,
            is_error=outcome.is_error,
            error_code=outcome.error_code,
            latency_ms=round(outcome.latency_ms, 3),
            started_at=outcome.started_at,
            roles=self.roles.roles_of(name) if self.roles is not None else None,
        )
        self.transcript.tool_calls.append(record)
        return record

    def refuse(
        self, name: str, arguments: dict[str, Any], turn: int, code: str, text: str
    ) -> ToolCall:
        """Record a call the harness answered itself without sending it (invalid arguments,
        unknown tool); it has no session and is not expected in the target's audit log."""
        record = ToolCall(
            index=len(self.transcript.tool_calls),
            turn=turn,
            session="",
            name=name,
            arguments=arguments,
            result=text,
            is_error=True,
            error_code=code,
        )
        self.transcript.tool_calls.append(record)
        return record


@dataclass
class EpisodeRequest:
    """One episode to run."""

    run_id: str
    arm: str
    task: Task
    attempt: int
    target: Target
    budget: int
    """Tool-call budget (the task's unless the agent overrides it)."""


@dataclass
class AgentContext:
    """What an agent factory may need from the experiment."""

    experiment_dir: Path = field(default_factory=Path.cwd)
    run_dir: Path | None = None
    world_dir: Path | None = None
    """The built world the experiment runs on (for agents that read it, e.g. ``probe``)."""
    unsealed: bool = False
    """Agent programs run without the bubblewrap sandbox (``--unsealed``)."""


class Agent(ABC):
    """Turns a task into tool calls on a target and answers."""

    kind: str
    provider: str | None = None
    """Provider kind (for concurrency limits and the journal); ``None`` without a model."""
    model: str | None = None
    uses_model: bool = False

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Agent settings for the manifest."""

    @abstractmethod
    async def run(self, request: EpisodeRequest, transcript: EpisodeTranscript) -> EpisodeStatus:
        """Run the episode, writing into ``transcript``; return how it ended. Raise
        :class:`~dabench.errors.HarnessError` for infrastructure failures."""

    def budget_for(self, task: Task) -> int:
        """The tool-call budget of an episode of ``task``."""
        return task.budget

    def model_endpoint(self) -> str | None:
        """``KIND:MODEL at URL`` of the model server this agent calls, checked once per run
        before the first episode (:meth:`check_model`); ``None`` when there is none to check."""
        return None

    async def check_model(self) -> None:
        """Raise :class:`~dabench.errors.HarnessError` naming the URL when the model server
        does not answer (the default: nothing to check)."""
        return None
        return None
