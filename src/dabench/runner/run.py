"""Running an experiment: plan episodes, start targets, run with bounded concurrency, journal.

Every finished episode is appended to the run's journal (durably) as soon as it ends, so a
killed run loses at most its in-flight episodes; ``resume`` runs only the missing keys.
Harness failures become ``harness_error`` episodes with their cause; after each episode the
target's audit rows are read back and compared with the harness's count of tool calls.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from dabench.agents.base import Agent, AgentContext, EpisodeRequest, EpisodeTranscript
from dabench.agents.registry import make_agent
from dabench.errors import HarnessError, UserInputError
from dabench.journal.records import AuditCheck, Episode, EpisodeStatus, StepRecord, episode_key
from dabench.journal.store import Journal, read_manifest, write_manifest
from dabench.runner.experiment import ArmConfig, Experiment
from dabench.runner.manifest import new_manifest
from dabench.runner.protocols import ProtocolRequest, protocol_runner, protocol_slot
from dabench.targets.base import Target, TargetContext
from dabench.targets.registry import make_target
from dabench.tasks.loader import (
    SuiteItem,
    TaskSet,
    dump_tasks,
    load_builtin_tasks,
    load_tasks,
)
from dabench.tasks.lock import (
    LOCK_FILE,
    check_lock,
    compute_lock,
    read_lock,
    read_world_manifest,
    write_lock,
)
from dabench.tasks.model import Protocol, Task, TruthLock
from dabench.tasks.selection import applies_to_arm, select_tasks

TASKS_FILE = "tasks.yaml"
"""The run's selected tasks, as they were when it started (graders read them)."""


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


@dataclass
class PlannedEpisode:
    """One (arm, task, attempt) to run."""

    arm: ArmRuntime
    item: SuiteItem
    attempt: int

    @property
    def key(self) -> str:
        """The journal key."""
        return episode_key(self.arm.name, self.item.id, self.attempt)


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


@dataclass
class RunSummary:
    """What a run did."""

    run_dir: Path
    planned: int = 0
    already_done: int = 0
    finished: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    audit_gaps: list[str] = field(default_factory=list)
    harness_errors: list[str] = field(default_factory=list)
    skipped_protocols: list[str] = field(default_factory=list)
    no_model: bool = False
    per_arm: dict[str, Counter[str]] = field(default_factory=dict)
    episodes_wall_s: float = 0.0
    """Wall time of the episode phase (targets already started)."""
    episodes_cpu_s: float = 0.0
    """CPU time of the harness process during the episode phase."""
    tool_calls: int = 0


def world_cache_dir() -> Path:
    """``$DABENCH_CACHE/worlds`` or ``~/.cache/dabench/worlds``."""
    base = os.environ.get("DABENCH_CACHE")
    root = Path(base) if base else Path.home() / ".cache" / "dabench"
    return root / "worlds"


def resolve_world(exp: Experiment, experiment_dir: Path) -> Path:
    """The world directory: the experiment's ``world.dir``, else built once into the cache."""
    if exp.world.dir:
        path = Path(exp.world.dir)
        path = path if path.is_absolute() else experiment_dir / path
        if not (path / "world.json").exists():
            raise UserInputError(f"world.dir {path}: not a built world (no world.json)")
        return path
    # The world package builds (once) on demand; looked up at run time.
    ensure_world = getattr(importlib.import_module("dabench.world"), "ensure_world", None)
    if ensure_world is None:
        raise UserInputError("this dabench cannot build worlds; set world.dir or --world DIR")
    return Path(ensure_world(exp.world.seed, exp.world.scale, world_cache_dir()))


def load_task_set(exp: Experiment, experiment_dir: Path) -> TaskSet:
    """The experiment's selected tasks (built-in suites plus its extra files)."""
    paths = [p if Path(p).is_absolute() else experiment_dir / p for p in exp.tasks.files]
    base = load_builtin_tasks() if exp.tasks.builtin else TaskSet()
    if paths:
        extra = load_tasks(paths)
        for item in extra.items:
            if item.id in base.sources:
                raise UserInputError(
                    f"{extra.sources[item.id]}: task id {item.id!r} is also a built-in task "
                    f"({base.sources[item.id]})"
                )
        base = TaskSet(
            tasks=[*base.tasks, *extra.tasks],
            protocols=[*base.protocols, *extra.protocols],
            sources={**base.sources, **extra.sources},
        )
    return select_tasks(base, exp.tasks)


class ExperimentRun:
    """One execution (or resumption) of an experiment into a run directory."""

    def __init__(
        self,
        exp: Experiment,
        run_dir: Path,
        *,
        experiment_dir: Path,
        resume: bool = False,
        console: Console | None = None,
        progress: bool = True,
    ) -> None:
        self.exp = exp
        self.run_dir = run_dir
        self.run_id = run_dir.name
        self.experiment_dir = experiment_dir
        self.resume = resume
        self.console = console or Console(stderr=True)
        self.show_progress = progress
        self.journal = Journal(run_dir)
        self.summary = RunSummary(run_dir=run_dir, no_model=not exp.uses_model())
        self.arms: list[ArmRuntime] = []

    # -- preparation ---------------------------------------------------------------------

    def _prepare_journal(self) -> set[str]:
        if self.resume:
            torn = self.journal.repair()
            if torn is not None:
                self.console.print(
                    f"[yellow]journal: removed a torn last line ({torn.reason}) at line "
                    f"{torn.line}[/yellow]"
                )
            settled = self.journal.settled_keys()
            retries = len(self.journal.keys() - settled)
            if retries:
                self.console.print(
                    f"journal: {retries} episode(s) that ended in a harness error will be retried"
                )
            return settled
        if self.journal.path.exists() and self.journal.path.stat().st_size > 0:
            raise UserInputError(
                f"{self.run_dir} already holds episodes; use `dabench run --resume {self.run_dir}`"
            )
        return set()

    def _lock(self, tasks: TaskSet, world_dir: Path, world_hash: str) -> TruthLock:
        """The run's truth lock: its own on resume, the experiment's, or computed; a stale
        lock is refused."""
        run_lock = self.run_dir / LOCK_FILE
        if self.resume and run_lock.exists():
            lock = read_lock(run_lock)
            check_lock(lock, tasks, world_hash, run_lock)
            return lock
        if self.exp.lock:
            given = Path(self.exp.lock)
            given = given if given.is_absolute() else self.experiment_dir / given
            lock = read_lock(given)
            check_lock(lock, tasks, world_hash, given)
            return lock
        return compute_lock(tasks, world_dir)

    def _plan(self, tasks: TaskSet, done: set[str]) -> list[PlannedEpisode]:
        plan: list[PlannedEpisode] = []
        has_protocol_runner = protocol_runner() is not None
        for attempt in range(self.exp.k):
            for item in tasks.items:
                if isinstance(item, Protocol) and not has_protocol_runner:
                    if item.id not in self.summary.skipped_protocols:
                        self.summary.skipped_protocols.append(item.id)
                    continue
                for arm in self.arms:
                    if not applies_to_arm(item, arm.name) or not arm.config.runs_suite(item.suite):
                        continue
                    p = PlannedEpisode(arm, item, attempt)
                    if p.key in done:
                        self.summary.already_done += 1
                    else:
                        plan.append(p)
        return plan

    # -- episodes ------------------------------------------------------------------------

    async def _play(
        self, p: PlannedEpisode, transcript: EpisodeTranscript
    ) -> tuple[EpisodeStatus, list[StepRecord]]:
        if isinstance(p.item, Protocol):
            runner = protocol_runner()
            if runner is None:  # pragma: no cover - filtered out in _plan
                raise HarnessError("no protocol runner registered")
            req = ProtocolRequest(
                self.run_id, p.arm.name, p.item, p.attempt, p.arm.target, p.arm.agent
            )
            return await runner(req, transcript)
        request = EpisodeRequest(
            run_id=self.run_id,
            arm=p.arm.name,
            task=p.item,
            attempt=p.attempt,
            target=p.arm.target,
            budget=p.arm.agent.budget_for(p.item),
        )
        return await p.arm.agent.run(request, transcript), []

    async def run_episode(self, p: PlannedEpisode) -> Episode:
        """Run one episode to an :class:`Episode` record; never raises for harness faults."""
        return await self.finish_episode(p, await self.play_episode(p))

    async def play_episode(self, p: PlannedEpisode) -> PlayedEpisode:
        """The agent's part of an episode, under its time limit; harness faults are caught."""
        played = PlayedEpisode(EpisodeTranscript(), started=datetime.now(UTC))
        t0 = time.perf_counter()
        try:
            async with asyncio.timeout(self.exp.episode_timeout_s):
                played.status, played.steps = await self._play(p, played.transcript)
        except TimeoutError:
            played.status = "timeout"
        except HarnessError as exc:
            played.status, played.cause = "harness_error", str(exc)
        except Exception as exc:  # a bug of ours is still not the model's failure
            played.status = "harness_error"
            played.cause = f"internal error: {type(exc).__name__}: {exc}"
        played.wall_ms = (time.perf_counter() - t0) * 1000
        played.finished = datetime.now(UTC)
        return played

    async def finish_episode(self, p: PlannedEpisode, played: PlayedEpisode) -> Episode:
        """Read the audit rows back and build the episode record."""
        transcript = played.transcript
        audit = await self._audit(p.arm.target, transcript) if transcript.sessions else None
        item = p.item
        prompts = item.messages if isinstance(item, Task) else [s.prompt or "" for s in item.steps]
        return Episode(
            key=p.key,
            run_id=self.run_id,
            arm=p.arm.name,
            task_id=item.id,
            attempt=p.attempt,
            suite=item.suite,
            category=item.category,
            difficulty=item.difficulty,
            status=played.status,
            harness_error=played.cause,
            agent=p.arm.agent.kind,
            provider=p.arm.agent.provider,
            model=p.arm.agent.model,
            target=p.arm.target.label,
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

    async def _audit(self, target: Target, transcript: EpisodeTranscript) -> AuditCheck:
        """The target's audit check for the episode's sessions."""
        expected = transcript.sent_calls()
        try:
            return await target.read_audit(transcript.sessions, expected)
        except Exception as exc:  # any failure to read back is a gap, never a crash
            return AuditCheck(
                source=target.efficiency_source,
                expected_calls=expected,
                audit_rows=0,
                ok=False,
                detail=f"AUDIT GAP: read-back failed: {type(exc).__name__}: {exc}",
            )

    def _record(self, ep: Episode) -> None:
        s = self.summary
        s.finished += 1
        s.statuses[ep.status] += 1
        s.per_arm.setdefault(ep.arm, Counter())[ep.status] += 1
        s.tool_calls += len(ep.tool_calls)
        if ep.status == "harness_error":
            s.harness_errors.append(f"{ep.key}: {ep.harness_error}")
        elif ep.audit is not None and not ep.audit.ok:
            s.audit_gaps.append(f"{ep.key}: {ep.audit.detail}")

    # -- the run -------------------------------------------------------------------------

    def _build_arms(self, world_dir: Path) -> None:
        shared: dict[str, object] = {}
        for i, arm in enumerate(self.exp.arms):
            ctx = TargetContext(
                world_dir=world_dir,
                work_dir=self.run_dir / "targets" / arm.name,
                experiment_dir=self.experiment_dir,
                shared=shared,
            )
            target = make_target(arm.target, ctx, f"arms[{i}].target")
            agent = make_agent(
                arm.agent,
                AgentContext(
                    experiment_dir=self.experiment_dir, run_dir=self.run_dir, world_dir=world_dir
                ),
                f"arms[{i}].agent",
            )
            self.arms.append(ArmRuntime(arm, target, agent))

    def _arm_manifest(self) -> list[dict[str, object]]:
        return [
            {
                "name": a.name,
                "description": a.config.description,
                "target": a.target.describe(),
                "agent": a.agent.describe(),
                "efficiency_source": a.target.efficiency_source,
            }
            for a in self.arms
        ]

    def _with_tools(self, arms: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The manifest's arms with ``tools``: the tool names each target showed its
        sessions, where the target reports them (grading never counts an expected tool the
        arm does not offer against it)."""
        runtimes = {a.name: a for a in self.arms}
        out = []
        for entry in arms:
            rt = runtimes.get(str(entry.get("name")))
            shown = rt.target.known_tools() if rt is not None else None
            if shown is not None and "tools" not in entry:
                entry = {**entry, "tools": sorted({t.name for t in shown})}
            out.append(entry)
        return out

    async def execute(self) -> RunSummary:
        """Prepare, start the targets, run every missing episode, stop the targets. Nothing
        is written to the run directory before the experiment has been fully validated."""
        done = self._prepare_journal()
        world_dir = resolve_world(self.exp, self.experiment_dir)
        world_hash = read_world_manifest(world_dir).world_hash
        tasks = load_task_set(self.exp, self.experiment_dir)
        previous = read_manifest(self.run_dir) if self.resume else None
        if previous is not None:
            if previous.world_hash != world_hash:
                raise UserInputError(
                    f"{self.run_dir}: the run used world {previous.world_hash[:12]}, "
                    f"this one is {world_hash[:12]}"
                )
            if previous.task_set_hash != tasks.hash():
                raise UserInputError(
                    f"{self.run_dir}: the tasks changed since the run started "
                    f"(task-set hash {previous.task_set_hash[:12]} -> {tasks.hash()[:12]})"
                )
        self._build_arms(world_dir)
        lock = self._lock(tasks, world_dir, world_hash)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        write_lock(lock, self.run_dir / LOCK_FILE)
        if not self.resume:
            dump_tasks(tasks, self.run_dir / TASKS_FILE)
        manifest = previous or new_manifest(
            run_id=self.run_id,
            experiment=self._resolved(world_dir),
            world_hash=world_hash,
            task_set_hash=tasks.hash(),
            task_ids=tasks.ids,
            arms=self._arm_manifest(),
        )
        write_manifest(self.run_dir, manifest)
        plan = self._plan(tasks, done)
        self.summary.planned = len(plan)
        if not plan:
            self.console.print("nothing to run: every episode is already in the journal")
            return self.summary
        try:
            await self._start_targets()
            if previous is None:
                manifest = manifest.model_copy(update={"arms": self._arm_manifest()})
                write_manifest(self.run_dir, manifest)
            await self._run_plan(plan)
        finally:
            await self._stop_targets()
            manifest = manifest.model_copy(
                update={"finished_at": datetime.now(UTC), "arms": self._with_tools(manifest.arms)}
            )
            write_manifest(self.run_dir, manifest)
        return self.summary

    def _resolved(self, world_dir: Path) -> Experiment:
        """The experiment with every path absolute (so a resume from anywhere finds them)."""

        def absolute(p: str) -> str:
            return str(p if Path(p).is_absolute() else (self.experiment_dir / p).resolve())

        data = self.exp.model_dump(mode="json")
        data["world"]["dir"] = str(world_dir.resolve())
        data["tasks"]["files"] = [absolute(f) for f in data["tasks"]["files"]]
        if data.get("lock"):
            data["lock"] = absolute(data["lock"])
        for arm in data["arms"]:
            if arm["agent"].get("kind") == "replay" and "run" in arm["agent"]:
                arm["agent"]["run"] = absolute(arm["agent"]["run"])
        return Experiment.model_validate(data)

    async def _start_targets(self) -> None:
        with self.console.status(f"starting {len(self.arms)} target(s)..."):
            results = await asyncio.gather(
                *(a.target.start() for a in self.arms), return_exceptions=True
            )
        for arm, res in zip(self.arms, results, strict=True):
            if isinstance(res, BaseException):
                raise HarnessError(
                    f"arm {arm.name}: target {arm.target.label} did not start: {res}"
                ) from res

    async def _stop_targets(self) -> None:
        await asyncio.gather(*(a.target.stop() for a in self.arms), return_exceptions=True)

    async def _run_plan(self, plan: list[PlannedEpisode]) -> None:
        overall = asyncio.Semaphore(self.exp.concurrency)
        per_provider: dict[str, asyncio.Semaphore] = {}
        for p in plan:
            key = p.arm.agent.provider or "none"
            if key not in per_provider:
                limit = self.exp.provider_concurrency.get(key, self.exp.concurrency)
                per_provider[key] = asyncio.Semaphore(limit)
        progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            disable=not self.show_progress,
        )

        async def one(p: PlannedEpisode, bar: TaskID) -> None:
            slot = protocol_slot(p.item, p.arm.target)  # before the slots and the time limit
            async with slot, overall, per_provider[p.arm.agent.provider or "none"]:
                played = await self.play_episode(p)
            # The audit read-back holds no concurrency slot: the next episode's model calls
            # start while it runs.
            ep = await self.finish_episode(p, played)
            await asyncio.to_thread(self.journal.append, ep)
            self._record(ep)
            errors = len(self.summary.harness_errors) + len(self.summary.audit_gaps)
            progress.update(bar, advance=1, errors=errors)

        wall0, cpu0 = time.perf_counter(), time.process_time()
        try:
            with progress:
                await self._gather(plan, one, progress)
        finally:
            self.summary.episodes_wall_s += time.perf_counter() - wall0
            self.summary.episodes_cpu_s += time.process_time() - cpu0

    @staticmethod
    async def _gather(
        plan: list[PlannedEpisode],
        one: Callable[[PlannedEpisode, TaskID], Coroutine[Any, Any, None]],
        progress: Progress,
    ) -> None:
        """Run every planned episode; on cancellation (Ctrl-C, SIGTERM) cancel them all."""
        bar = progress.add_task("episodes", total=len(plan), errors=0)
        jobs = [asyncio.create_task(one(p, bar), name=p.key) for p in plan]
        try:
            await asyncio.gather(*jobs)
        finally:
            for job in jobs:
                job.cancel()
            await asyncio.gather(*jobs, return_exceptions=True)
