"""Running an experiment: plan episodes, start targets, run with bounded concurrency, journal.

Every finished episode is appended to the run's journal (durably) as soon as it ends, so a
killed run loses at most its in-flight episodes; ``resume`` runs only the missing keys.

The answer key (``tasks.lock.json``, ``tasks.yaml``) is written into the run directory only
after the last episode (as ``dabench play`` does); during the run grading inputs live in the
harness's memory only. A resumed run reads both into memory and removes them before its first
episode (a run killed before its end has neither: its lock is computed again from the suites
and the world, and checked against the manifest's task-set and world hashes), then writes
them back at its end.
Harness failures become ``harness_error`` episodes with their cause; after each episode the
target's audit rows are read back and compared with the harness's count of tool calls.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

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

from dabench.agents.base import Agent
from dabench.errors import HarnessError, UserInputError
from dabench.journal.records import Episode, RunManifest
from dabench.journal.store import Journal, read_manifest, write_manifest
from dabench.listing import stderr_console
from dabench.runner.episode import (
    ArmRuntime,
    EpisodeJob,
    PlayedEpisode,
    build_arm,
    finish_episode,
    play_episode,
    run_job,
)
from dabench.runner.experiment import EXTERNAL_WORLD_KEYS, Experiment
from dabench.runner.manifest import new_manifest
from dabench.runner.protocols import protocol_runner
from dabench.sandbox import UNSEALED_CAVEAT
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
from dabench.tasks.model import Protocol, TruthLock
from dabench.tasks.selection import applies_to_arm, select_tasks
from dabench.world.source import (
    SOURCE_FILE,
    DataFingerprint,
    is_world_dir,
    open_world,
    write_source_dir,
)

TASKS_FILE = "tasks.yaml"
"""The run's selected tasks, as they were when it started (graders read them)."""


@dataclass
class PlannedEpisode:
    """One (arm, task, attempt) to run, with the arm's runtime."""

    arm: ArmRuntime
    item: SuiteItem
    attempt: int

    @property
    def job(self) -> EpisodeJob:
        """The picklable job (what a remote executor ships)."""
        return EpisodeJob(self.arm.name, self.item, self.attempt)

    @property
    def key(self) -> str:
        """The journal key."""
        return self.job.key


__all__ = ["ArmRuntime", "ExperimentRun", "PlannedEpisode", "PlayedEpisode", "RunSummary"]


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
    per_node: Counter[str] = field(default_factory=Counter)
    """Episodes per node (the Ray executor)."""
    requeued: int = 0
    """Episodes re-queued because their node or worker was lost (the Ray executor)."""
    provider_limits: dict[str, dict[str, int]] = field(default_factory=dict)
    """Per provider: the cluster-wide limiter's figures (limit, high_water...; Ray)."""


def resolve_world(exp: Experiment, experiment_dir: Path) -> Path:
    """The world directory: the experiment's ``world.dir`` (built or external), an inline
    external world written as a ``world.yaml`` directory, else built once into the cache."""
    if exp.world.kind == "warehouse":
        return inline_world_dir(exp.world, experiment_dir)
    if exp.world.dir:
        path = Path(exp.world.dir)
        path = path if path.is_absolute() else experiment_dir / path
        if not is_world_dir(path):
            raise UserInputError(
                exp.located(
                    f"world.dir {path}: not a built world (no world.json) nor an external "
                    f"world (no {SOURCE_FILE})",
                    *("world", "dir"),
                    value=exp.world.dir,
                )
            )
        return path
    from dabench.world.cache import default_world  # builds (once) on demand

    return default_world(exp.world.seed, exp.world.scale)


def inline_world_dir(spec: Any, experiment_dir: Path) -> Path:
    """A directory with the ``world.yaml`` of an inline external world (paths made absolute
    against the experiment's directory), under the cache."""
    from dabench.sandbox import cache_root
    from dabench.world.source import WorldSource

    def absolute(value: str) -> str:
        path = Path(value)
        return str(path if path.is_absolute() else (experiment_dir / path).resolve())

    location = spec.location if spec.engine == "postgres" else absolute(spec.location)
    source = WorldSource(
        engine=spec.engine,
        location=location,
        knowledge=absolute(spec.knowledge),
        snapshot_id=spec.snapshot_id,
    )
    return write_source_dir(source, cache_root() / "external-worlds")


def load_task_set(exp: Experiment, experiment_dir: Path) -> TaskSet:
    """The experiment's selected tasks (built-in suites plus its extra files)."""
    paths = [p if Path(p).is_absolute() else experiment_dir / p for p in exp.tasks.files]
    for i, (given, path) in enumerate(zip(exp.tasks.files, paths, strict=True)):
        if not Path(path).exists():
            message = f"tasks.files[{i}] {path}: no such task file or folder"
            raise UserInputError(exp.located(message, "tasks", "files", i, value=given))
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
    known = set(base.ids)
    for i, task_id in enumerate(exp.tasks.tasks):
        if task_id not in known:
            message = f"tasks.tasks[{i}] {task_id!r}: no such task id in the experiment's tasks"
            raise UserInputError(exp.located(message, "tasks", "tasks", i, value=task_id))
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
        executor: Literal["local", "ray"] | None = None,
        ray_address: str | None = None,
    ) -> None:
        self.exp = exp
        self.run_dir = run_dir
        self.run_id = run_dir.name
        self.experiment_dir = experiment_dir
        self.resume = resume
        self._fingerprint: DataFingerprint | None = None
        self._world_source: str | None = None
        self.console = console or stderr_console()
        self.show_progress = progress
        self.journal = Journal(run_dir)
        self.summary = RunSummary(run_dir=run_dir, no_model=not exp.uses_model())
        self.arms: list[ArmRuntime] = []
        self.executor = executor or exp.executor
        self.ray_address = ray_address
        self.remote_targets: dict[str, dict[str, Any]] = {}
        """Per arm: the target description a remote executor's started target gave."""
        self.remote_tools: dict[str, list[str]] = {}
        """Per arm: the tool names a remote executor's target showed its sessions."""
        self.world_seed: int | None = None
        self.world_scale: int | None = None

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
            check_lock(lock, tasks, world_hash, run_lock, self._fingerprint)
            return lock
        if self.exp.lock:
            given = Path(self.exp.lock)
            given = given if given.is_absolute() else self.experiment_dir / given
            lock = read_lock(given)
            check_lock(lock, tasks, world_hash, given, self._fingerprint)
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

    async def run_episode(self, p: PlannedEpisode) -> Episode:
        """Run one episode to an :class:`Episode` record; never raises for harness faults."""
        return await self.finish_episode(p, await self.play_episode(p))

    async def play_episode(self, p: PlannedEpisode) -> PlayedEpisode:
        """The agent's part of an episode, under its time limit; harness faults are caught."""
        return await play_episode(self.run_id, p.arm, p.job, self.exp.episode_timeout_s)

    async def finish_episode(self, p: PlannedEpisode, played: PlayedEpisode) -> Episode:
        """Read the audit rows back and build the episode record."""
        return await finish_episode(self.run_id, p.arm, p.job, played)

    async def deliver(self, ep: Episode) -> None:
        """Journal a finished episode (the driver alone writes the journal) and count it."""
        await asyncio.to_thread(self.journal.append, ep)
        self._record(ep)

    def error_count(self) -> int:
        """Harness errors plus audit gaps so far (the progress bar shows them)."""
        return len(self.summary.harness_errors) + len(self.summary.audit_gaps)

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

            def locate(part: str, message: str, name: str = arm.name) -> str:
                return self.exp.located(message, "arms", name, part)

            self.arms.append(
                build_arm(
                    arm,
                    i,
                    world_dir=world_dir,
                    work_dir=self.run_dir / "targets" / arm.name,
                    experiment_dir=self.experiment_dir,
                    run_dir=self.run_dir,
                    shared=shared,
                    unsealed=self.exp.unsealed,
                    locate=locate,
                )
            )

    def _arm_manifest(self) -> list[dict[str, object]]:
        return [
            {
                "name": a.name,
                "description": a.config.description,
                "target": self.remote_targets.get(a.name) or a.target.describe(),
                "agent": a.agent.describe(),
                "efficiency_source": a.target.efficiency_source,
                "roles": a.target.tool_roles.dump(),
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
            names = self.remote_tools.get(str(entry.get("name")))
            if names is None and shown is not None:
                names = sorted({t.name for t in shown})
            if names is not None and "tools" not in entry:
                entry = {**entry, "tools": names}
            out.append(entry)
        return out

    async def execute(self) -> RunSummary:
        """Prepare, start the targets, run every missing episode, stop the targets. Nothing
        is written to the run directory before the experiment has been fully validated."""
        done = self._prepare_journal()
        world_dir = resolve_world(self.exp, self.experiment_dir)
        world = open_world(world_dir)
        world_hash = world.world_hash
        self._fingerprint = world.fingerprint()
        if self._fingerprint is not None:
            self._world_source = (
                f"external {world.source.engine} warehouse "
                f"({len(self._fingerprint.tables)} tables, data fingerprint "
                f"{self._fingerprint.hash[:12]}, {len(world.rules)} hidden rules)"
            )
        if world.builtin:
            built = read_world_manifest(world_dir)
            self.world_seed, self.world_scale = built.seed, built.scale
        tasks = load_task_set(self.exp, self.experiment_dir)
        previous = read_manifest(self.run_dir, with_secrets=True) if self.resume else None
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
        await self._check_models()
        lock = self._lock(tasks, world_dir, world_hash)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        key = self._take_key(lock, tasks)
        try:
            return await self._execute(previous, tasks, done, world_dir, world_hash)
        finally:
            self._put_key(key)

    async def _execute(
        self,
        previous: RunManifest | None,
        tasks: TaskSet,
        done: set[str],
        world_dir: Path,
        world_hash: str,
    ) -> RunSummary:
        """Write the manifest and run the plan (the answer key is not in the run directory)."""
        manifest = previous or new_manifest(
            run_id=self.run_id,
            experiment=self._resolved(world_dir),
            world_hash=world_hash,
            task_set_hash=tasks.hash(),
            task_ids=tasks.ids,
            arms=self._arm_manifest(),
            world_source=self._world_source,
            world_seed=self.world_seed,
            world_scale=self.world_scale,
            world_seed_random=self.exp.world.drawn,
        )
        if previous is None and self._unsealed_agents():
            manifest = manifest.model_copy(update={"caveats": [UNSEALED_CAVEAT]})
        write_manifest(self.run_dir, manifest)
        plan = self._plan(tasks, done)
        self.summary.planned = len(plan)
        if not plan:
            self.console.print("nothing to run: every episode is already in the journal")
            return self.summary
        try:
            if self.executor == "ray":
                # Imported only here: the local executor never needs Ray installed.
                try:
                    from dabench.runner.ray_executor import RayExecutor
                except ImportError as exc:
                    raise UserInputError(
                        f"executor ray needs Ray ({exc}); install it: pip install 'dabench[ray]'"
                    ) from exc

                await RayExecutor(self, self.ray_address).run_plan(plan, world_hash)
            else:
                await self._start_targets()
                if previous is None:
                    manifest = manifest.model_copy(update={"arms": self._arm_manifest()})
                    write_manifest(self.run_dir, manifest)
                await self._run_plan(plan)
        finally:
            if self.executor != "ray":
                await self._stop_targets()
            elif previous is None:
                manifest = manifest.model_copy(update={"arms": self._arm_manifest()})
            manifest = manifest.model_copy(
                update={"finished_at": datetime.now(UTC), "arms": self._with_tools(manifest.arms)}
            )
            write_manifest(self.run_dir, manifest)
        return self.summary

    def _unsealed_agents(self) -> bool:
        return any(a.agent.describe().get("isolation") == "unsealed" for a in self.arms)

    def _take_key(self, lock: TruthLock, tasks: TaskSet) -> dict[str, bytes]:
        """The answer key's files as they will be written at the end (a resumed run's own,
        read into memory and removed from the run directory now)."""
        files = {LOCK_FILE: self.run_dir / LOCK_FILE, TASKS_FILE: self.run_dir / TASKS_FILE}
        key: dict[str, bytes] = {}
        for name, path in files.items():
            if self.resume and path.exists():
                key[name] = path.read_bytes()
                path.unlink()
        with tempfile.TemporaryDirectory(prefix="dabench-key-") as tmp:
            if LOCK_FILE not in key:
                key[LOCK_FILE] = write_lock(lock, Path(tmp) / LOCK_FILE).read_bytes()
            if TASKS_FILE not in key:
                key[TASKS_FILE] = dump_tasks(tasks, Path(tmp) / TASKS_FILE).read_bytes()
        return key

    def _put_key(self, key: dict[str, bytes]) -> None:
        """Write the answer key into the run directory (after the last episode)."""
        for name, data in key.items():
            tmp = self.run_dir / f".{name}.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, self.run_dir / name)

    def _resolved(self, world_dir: Path) -> Experiment:
        """The experiment with every path absolute (so a resume from anywhere finds them)."""

        def absolute(p: str) -> str:
            return str(p if Path(p).is_absolute() else (self.experiment_dir / p).resolve())

        data = self.exp.model_dump(mode="json")
        for key in EXTERNAL_WORLD_KEYS:  # an inline external world is now its directory
            data["world"][key] = None
        data["world"]["dir"] = str(world_dir.resolve())
        data["tasks"]["files"] = [absolute(f) for f in data["tasks"]["files"]]
        if data.get("lock"):
            data["lock"] = absolute(data["lock"])
        for arm in data["arms"]:
            if arm["agent"].get("kind") == "replay" and "run" in arm["agent"]:
                arm["agent"]["run"] = absolute(arm["agent"]["run"])
        return Experiment.model_validate(data)

    def new_progress(self) -> Progress:
        """The run's progress bar (one row per task added: episodes, or per node)."""
        return Progress(
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

    async def _check_models(self) -> None:
        """Ping each model server the arms call (once per model and URL) before anything is
        written: an unreachable one stops the run with one error naming its URL."""
        agents: dict[str, Agent] = {}
        for arm in self.arms:
            endpoint = arm.agent.model_endpoint()
            if endpoint is not None:
                agents.setdefault(endpoint, arm.agent)
        if not agents:
            return
        with self.console.status(f"checking {len(agents)} model server(s)..."):
            results = await asyncio.gather(
                *(a.check_model() for a in agents.values()), return_exceptions=True
            )
        failures = [r for r in results if isinstance(r, BaseException)]
        for failure in failures:
            if not isinstance(failure, HarnessError):
                raise failure
        if failures:
            raise HarnessError("; ".join(str(f) for f in failures))

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
        progress = self.new_progress()

        async def one(p: PlannedEpisode, bar: TaskID) -> None:
            limits = [overall, per_provider[p.arm.agent.provider or "none"]]
            ep = await run_job(self.run_id, p.arm, p.job, self.exp.episode_timeout_s, limits)
            await self.deliver(ep)
            progress.update(bar, advance=1, errors=self.error_count())

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
