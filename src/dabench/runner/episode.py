"""The episode code every executor shares: build an arm, play one episode, read its audit back.

The local asyncio executor (:mod:`dabench.runner.run`) and the Ray executor
(:mod:`dabench.runner.ray_executor`) both call :func:`play_episode` and :func:`finish_episode`;
an episode is a picklable :class:`EpisodeJob` (arm name, task, attempt) played on an
:class:`ArmRuntime` (the arm's live target and agent) wherever that runtime lives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dabench.agents.base import Agent, AgentContext, EpisodeRequest, EpisodeTranscript
from dabench.agents.registry import make_agent
from dabench.errors import HarnessError, UserInputError
from dabench.journal.records import AuditCheck, Episode, EpisodeStatus, StepRecord, episode_key
from dabench.runner.experiment import ArmConfig
from dabench.runner.protocols import ProtocolRequest, protocol_runner, protocol_slot
from dabench.targets.base import Target, TargetContext
from dabench.targets.registry import make_target
from dabench.tasks.loader import SuiteItem
from dabench.tasks.model import Protocol, Task

logger = logging.getLogger(__name__)


@dataclass
class ArmRuntime:
    """An arm with its live target and agent."""

    config: ArmConfig
    target: Target
    agent: Agent

    @property
    def name(self) -> str:
        """The arm's name."""
        return self.config.name


def build_arm(
    arm: ArmConfig,
    index: int,
    *,
    world_dir: Path,
    work_dir: Path,
    experiment_dir: Path,
    run_dir: Path,
    shared: dict[str, object] | None = None,
    unsealed: bool = False,
    locate: Callable[[str, str], str] | None = None,
) -> ArmRuntime:
    """The arm's target (not started) and agent; ``index`` names it in config errors, and
    ``locate(part, message)`` puts the experiment file's line of ``target``/``agent`` on them."""
    ctx = TargetContext(
        world_dir=world_dir,
        work_dir=work_dir,
        experiment_dir=experiment_dir,
        shared=shared if shared is not None else {},
    )
    agent_ctx = AgentContext(
        experiment_dir=experiment_dir, run_dir=run_dir, world_dir=world_dir, unsealed=unsealed
    )
    try:
        target = make_target(arm.target, ctx, f"arms[{index}].target")
    except UserInputError as exc:
        raise UserInputError(locate("target", str(exc)) if locate else str(exc)) from exc
    try:
        agent = make_agent(arm.agent, agent_ctx, f"arms[{index}].agent")
    except UserInputError as exc:
        raise UserInputError(locate("agent", str(exc)) if locate else str(exc)) from exc
    return ArmRuntime(arm, target, agent)


@dataclass(frozen=True)
class EpisodeJob:
    """One (arm, task, attempt) to run: picklable, so it can travel to another process."""

    arm: str
    item: SuiteItem
    attempt: int

    @property
    def key(self) -> str:
        """The journal key."""
        return episode_key(self.arm, self.item.id, self.attempt)


@dataclass
class PlayedEpisode:
    """What the agent produced, before the audit read-back."""

    transcript: EpisodeTranscript
    started: datetime
    status: EpisodeStatus = "harness_error"
    cause: str | None = None
    steps: list[StepRecord] = field(default_factory=list)
    wall_ms: float = 0.0
    finished: datetime | None = None


async def _play(
    run_id: str, arm: ArmRuntime, job: EpisodeJob, transcript: EpisodeTranscript, target: Target
) -> tuple[EpisodeStatus, list[StepRecord]]:
    if isinstance(job.item, Protocol):
        runner = protocol_runner()
        if runner is None:  # pragma: no cover - filtered out when planning
            raise HarnessError("no protocol runner registered")
        req = ProtocolRequest(run_id, arm.name, job.item, job.attempt, target, arm.agent)
        return await runner(req, transcript)
    request = EpisodeRequest(
        run_id=run_id,
        arm=arm.name,
        task=job.item,
        attempt=job.attempt,
        target=target,
        budget=arm.agent.budget_for(job.item),
    )
    return await arm.agent.run(request, transcript), []


async def play_episode(
    run_id: str, arm: ArmRuntime, job: EpisodeJob, timeout_s: float
) -> PlayedEpisode:
    """The agent's part of an episode, under its time limit; harness faults are caught.
    The episode plays on the target's view of it (:meth:`Target.begin_episode`: keys of its
    own on the reference platform), which is ended (keys revoked) whatever happened."""
    played = PlayedEpisode(EpisodeTranscript(), started=datetime.now(UTC))
    t0 = time.perf_counter()
    scope = arm.target
    try:
        async with asyncio.timeout(timeout_s):
            scope = await arm.target.begin_episode(job.key)
            played.transcript.episode = scope.episode_id
            played.status, played.steps = await _play(run_id, arm, job, played.transcript, scope)
    except TimeoutError:
        played.status = "timeout"
    except HarnessError as exc:
        played.status, played.cause = "harness_error", str(exc)
    except Exception as exc:  # a bug of ours is still not the model's failure
        played.status = "harness_error"
        played.cause = f"internal error: {type(exc).__name__}: {exc}"
    await end_episode(scope, played.transcript.sessions)
    played.wall_ms = (time.perf_counter() - t0) * 1000
    played.finished = datetime.now(UTC)
    return played


async def end_episode(target: Target, sessions: list[str]) -> None:
    """Let the target release the episode's sessions (bounded; a failure there is not the
    episode's: it is logged)."""
    try:
        async with asyncio.timeout(30):
            await target.end_episode(sessions)
    except Exception as exc:
        logger.warning("%s: releasing sessions failed: %s", target.label, exc)


async def read_audit(target: Target, transcript: EpisodeTranscript) -> AuditCheck:
    """The target's audit check for the episode's sessions (a failed read-back is a gap)."""
    expected = transcript.sent_calls()
    try:
        return await target.read_audit(transcript.sessions, expected, transcript.episode)
    except Exception as exc:  # any failure to read back is a gap, never a crash
        return AuditCheck(
            source=target.efficiency_source,
            expected_calls=expected,
            audit_rows=0,
            ok=False,
            detail=f"AUDIT GAP: read-back failed: {type(exc).__name__}: {exc}",
        )


async def finish_episode(
    run_id: str, arm: ArmRuntime, job: EpisodeJob, played: PlayedEpisode
) -> Episode:
    """Read the audit rows back and build the episode record."""
    transcript = played.transcript
    audit = await read_audit(arm.target, transcript) if transcript.sessions else None
    roles = arm.target.tool_roles
    for call in [*transcript.tool_calls, *(c for s in played.steps for c in s.tool_calls)]:
        if call.roles is None:  # calls an agent recorded itself (kibana, command, claude CLI)
            call.roles = roles.roles_of(call.name)
    item = job.item
    prompts = item.messages if isinstance(item, Task) else [s.prompt or "" for s in item.steps]
    return Episode(
        key=job.key,
        run_id=run_id,
        arm=arm.name,
        task_id=item.id,
        attempt=job.attempt,
        suite=item.suite,
        category=item.category,
        difficulty=item.difficulty,
        status=played.status,
        harness_error=played.cause,
        agent=arm.agent.kind,
        provider=arm.agent.provider,
        model=arm.agent.model,
        target=arm.target.label,
        prompts=prompts,
        answers=transcript.answers,
        final_answer=transcript.answers[-1] if transcript.answers else None,
        messages=transcript.messages,
        tool_calls=transcript.tool_calls,
        steps=played.steps,
        usage=transcript.usage,
        usage_known=transcript.usage_known,
        cost_usd=transcript.cost_usd,
        cost_source=transcript.cost_source if transcript.cost_usd is not None else "none",
        wall_ms=round(played.wall_ms, 3),
        ttft_ms=transcript.ttft_ms,
        ttft_source=transcript.ttft_source,
        transient_retries=transcript.transient_retries,
        sessions=transcript.sessions,
        audit=audit,
        rounds=transcript.rounds,
        started_at=played.started,
        finished_at=played.finished or datetime.now(UTC),
    )


async def run_job(
    run_id: str,
    arm: ArmRuntime,
    job: EpisodeJob,
    timeout_s: float,
    limits: Sequence[AbstractAsyncContextManager[Any]],
) -> Episode:
    """One episode, start to record: the protocol slot and then ``limits`` (concurrency,
    provider) are held while the agent plays; the audit read-back holds none of them, so the
    next episode's model calls start while it runs."""
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(protocol_slot(job.item, arm.target))
        for limit in limits:
            await stack.enter_async_context(limit)
        played = await play_episode(run_id, arm, job, timeout_s)
    return await finish_episode(run_id, arm, job, played)
