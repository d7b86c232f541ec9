"""The Ray executor: episodes of one run spread over the nodes of a Ray cluster.

One :class:`ArmWorker` actor runs per (node, arm), pinned to its node: it finds the world
(the experiment's world directory, built or external, or its inline external world, when the
node has it; else the world built from the seed into the node's own cache), refuses to serve
when its hash differs from the driver's (an external world's data fingerprint is computed on
the node, in its engine), starts the arm's
target (one reference platform per node and arm) and plays episodes with the same episode code
as the local executor (:func:`dabench.runner.episode.run_job`). Provider limits
(``provider_concurrency``) hold cluster-wide through one :class:`ProviderLimiter` actor per
provider. The driver dispatches jobs to nodes with free slots (``ray.node_concurrency`` each),
receives finished :class:`~dabench.journal.records.Episode` records and alone writes the journal.
When a node or worker is lost, its in-flight episodes go back to the queue and run elsewhere;
they are never recorded, so they can be neither a model failure nor a duplicate.

Ray is imported with this module, which the runner imports only for ``executor: ray``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import (
    GetTimeoutError,
    NodeDiedError,
    ObjectLostError,
    OwnerDiedError,
    RayActorError,
    WorkerCrashedError,
)
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from dabench.errors import HarnessError, UserInputError
from dabench.journal.records import Episode
from dabench.runner.episode import ArmRuntime, EpisodeJob, build_arm, run_job
from dabench.runner.experiment import Experiment
from dabench.world.source import is_world_dir, open_world

if TYPE_CHECKING:
    from dabench.runner.run import ExperimentRun, PlannedEpisode

LOST = (RayActorError, NodeDiedError, WorkerCrashedError, ObjectLostError, OwnerDiedError)
"""What a lost node or worker raises on the driver: the episode is re-queued, not recorded."""


def node_world(exp: Experiment, experiment_dir: Path, world_hash: str) -> Path:
    """This node's copy of the run's world, found as the driver found it
    (:func:`~dabench.runner.run.resolve_world`): the experiment's world directory (built or
    external) or its inline external world when it exists on this node, else the world built
    from the seed into this node's cache (or the one already there). Opened by
    :func:`~dabench.world.source.open_world` like every world, so an external world's hash
    (its knowledge files and the data fingerprint, computed here in its engine) is checked as
    a built one's. Raises :class:`HarnessError` when the hash differs from the driver's."""
    from dabench.runner.run import resolve_world

    given = Path(exp.world.dir) if exp.world.dir else None
    if given is not None and not given.is_absolute():
        given = experiment_dir / given
    if exp.world.kind == "warehouse" or (given is not None and is_world_dir(given)):
        path = resolve_world(exp, experiment_dir)
        what = "the world's files or data differ on this node"
    else:
        seeded = exp.model_copy(update={"world": exp.world.model_copy(update={"dir": None})})
        path = resolve_world(seeded, experiment_dir)
        what = f"seed {exp.world.seed}, scale {exp.world.scale}"
    try:
        found = open_world(path).world_hash
    except UserInputError as exc:
        raise HarnessError(f"node world {path}: {exc}") from exc
    if found != world_hash:
        raise HarnessError(
            f"node world {path}: hash {found[:12]} differs from the driver's {world_hash[:12]} "
            f"({what}); refusing to serve"
        )
    return path


@ray.remote(num_cpus=0)
class ProviderLimiter:
    """A cluster-wide semaphore for one provider: at most ``limit`` episodes of the provider
    play at once, whichever node they run on. Permits are counted per holder (a worker), so
    the driver can return those of a lost worker."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_use = 0
        self.high_water = 0
        self.granted = 0
        self.held: collections.Counter[str] = collections.Counter()
        self.lost: set[str] = set()
        self._free: asyncio.Condition | None = None

    def _cond(self) -> asyncio.Condition:
        if self._free is None:  # created on the actor's event loop
            self._free = asyncio.Condition()
        return self._free

    async def acquire(self, holder: str) -> bool:
        """Wait for a permit; ``False`` (no permit) when ``holder`` was declared lost."""
        cond = self._cond()
        async with cond:
            await cond.wait_for(lambda: self.in_use < self.limit or holder in self.lost)
            if holder in self.lost:
                return False
            self.in_use += 1
            self.granted += 1
            self.held[holder] += 1
            self.high_water = max(self.high_water, self.in_use)
            return True

    async def release(self, holder: str) -> None:
        """Return one permit of ``holder``."""
        cond = self._cond()
        async with cond:
            if self.held[holder] > 0:
                self.held[holder] -= 1
                self.in_use -= 1
                cond.notify_all()

    async def release_lost(self, holder: str) -> int:
        """Return every permit of a lost ``holder`` and refuse it any more; the count returned."""
        cond = self._cond()
        async with cond:
            self.lost.add(holder)
            count = self.held.pop(holder, 0)
            self.in_use -= count
            cond.notify_all()
            return count

    def stats(self) -> dict[str, int]:
        """``limit``, ``in_use``, ``high_water`` (most permits ever out at once), ``granted``."""
        return {
            "limit": self.limit,
            "in_use": self.in_use,
            "high_water": self.high_water,
            "granted": self.granted,
        }


@contextlib.asynccontextmanager
async def _permit(limiter: Any, holder: str) -> AsyncIterator[None]:
    if not await limiter.acquire.remote(holder):
        raise HarnessError(f"provider limiter: worker {holder} was declared lost")
    try:
        yield
    finally:
        await limiter.release.remote(holder)


@ray.remote(num_cpus=0)
class ArmWorker:
    """One arm on one node: its own target (a reference platform per node and arm) and agent."""

    def __init__(
        self, exp: Experiment, arm_index: int, experiment_dir: str, run_id: str, tag: str
    ) -> None:
        self.exp = exp
        self.arm_index = arm_index
        self.experiment_dir = Path(experiment_dir)
        self.run_id = run_id
        self.tag = tag
        self.work = Path(tempfile.mkdtemp(prefix=f"dabench-{run_id[:24]}-"))
        self.runtime: ArmRuntime | None = None

    async def start(self, world_hash: str) -> dict[str, Any]:
        """Find and verify the world, start the target; its description and the world path."""
        world_dir = await asyncio.to_thread(node_world, self.exp, self.experiment_dir, world_hash)
        arm = self.exp.arms[self.arm_index]
        self.runtime = build_arm(
            arm,
            self.arm_index,
            world_dir=world_dir,
            work_dir=self.work / "targets" / arm.name,
            experiment_dir=self.experiment_dir,
            run_dir=self.work,
            unsealed=self.exp.unsealed,
        )
        await self.runtime.target.start()
        return {"target": self.runtime.target.describe(), "world_dir": str(world_dir)}

    async def run(self, job: EpisodeJob, limiter: Any | None) -> Episode:
        """Play one episode (under the cluster-wide provider permit, if any) to its record."""
        if self.runtime is None:
            raise HarnessError(f"worker {self.tag}: not started")
        limits = [_permit(limiter, self.tag)] if limiter is not None else []
        return await run_job(self.run_id, self.runtime, job, self.exp.episode_timeout_s, limits)

    async def stop(self) -> list[str] | None:
        """Stop the target; the tool names its sessions showed (``None``: unknown)."""
        if self.runtime is None:
            return None
        shown = self.runtime.target.known_tools()
        try:
            await self.runtime.target.stop()
        finally:
            shutil.rmtree(self.work, ignore_errors=True)
        return sorted({t.name for t in shown}) if shown is not None else None


@dataclass
class _Node:
    node_id: str
    label: str
    workers: dict[str, Any] = field(default_factory=dict)
    """Arm name -> live ArmWorker handle."""
    in_flight: int = 0
    bar: Any = None


async def _await(ref: Any) -> Any:
    return await ref


def alive_nodes() -> list[tuple[str, str]]:
    """``(node_id, label)`` of every alive node with CPUs; label ``IP/first 6 of the id``."""
    out = []
    for n in ray.nodes():  # type: ignore[no-untyped-call]
        if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0:
            out.append((str(n["NodeID"]), f"{n['NodeManagerAddress']}/{str(n['NodeID'])[:6]}"))
    return sorted(out)


class RayExecutor:
    """Runs a run's planned episodes on a Ray cluster (see the module docstring)."""

    def __init__(self, run: ExperimentRun, address: str | None = None) -> None:
        self.run = run
        self.exp = run.exp
        self.address = address or run.exp.ray.address
        self.per_node = run.exp.ray.node_concurrency or run.exp.concurrency
        self.nodes: dict[str, _Node] = {}
        self.limiters: dict[str, Any] = {}
        self.limiter_stats: dict[str, dict[str, int]] = {}
        """Per provider, the limiter's figures at the end of the run."""

    async def run_plan(self, plan: list[PlannedEpisode], world_hash: str) -> None:
        """Connect, start a worker per (node, arm), run the plan, stop the workers."""
        started_ray = not ray.is_initialized()
        if started_ray:
            ray.init(
                address=self.address,
                logging_level=logging.ERROR,
                log_to_driver=False,
                include_dashboard=False,
            )
        try:
            await self._start(plan, world_hash)
            await self._dispatch(plan)
        finally:
            await self._stop()
            if started_ray:
                ray.shutdown()

    async def _start(self, plan: list[PlannedEpisode], world_hash: str) -> None:
        arms = {p.arm.name for p in plan}
        driver_node = ray.get_runtime_context().get_node_id()
        for provider in sorted({p.arm.agent.provider or "none" for p in plan}):
            limit = self.exp.provider_concurrency.get(provider)
            if limit is not None:
                self.limiters[provider] = ProviderLimiter.options(  # type: ignore[attr-defined]
                    scheduling_strategy=NodeAffinitySchedulingStrategy(driver_node, soft=True)
                ).remote(limit)
        starts: list[tuple[_Node, str, Any]] = []
        for node_id, label in alive_nodes():
            node = _Node(node_id, label)
            self.nodes[node_id] = node
            for index, arm in enumerate(self.exp.arms):
                if arm.name not in arms:
                    continue
                worker = ArmWorker.options(  # type: ignore[attr-defined]
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                    max_restarts=0,
                    max_concurrency=max(16, 4 * self.per_node),
                ).remote(
                    self.exp, index, str(self.run.experiment_dir), self.run.run_id,
                    f"{label}/{arm.name}",
                )  # fmt: skip
                node.workers[arm.name] = worker
                starts.append((node, arm.name, worker.start.remote(world_hash)))
        if not starts:
            raise HarnessError(f"ray cluster {self.address or 'local'}: no alive node with CPUs")
        with self.run.console.status(
            f"starting {len(starts)} worker(s) on {len(self.nodes)} node(s)..."
        ):
            results = await asyncio.gather(
                *(_await(r) for _, _, r in starts), return_exceptions=True
            )
        for (node, name, _), res in zip(starts, results, strict=True):
            if isinstance(res, LOST):
                node.workers.pop(name, None)
            elif isinstance(res, BaseException):
                cause = res.cause if isinstance(res, ray.exceptions.RayTaskError) else res
                raise HarnessError(
                    f"arm {name} on node {node.label}: did not start: {cause}"
                ) from res
            else:
                self.run.remote_targets.setdefault(name, res["target"])

    def _pick(self, job: EpisodeJob) -> _Node | None:
        """The live node with a worker for the job's arm and the most free slots."""
        best: _Node | None = None
        for node in self.nodes.values():
            free = job.arm in node.workers and node.in_flight < self.per_node
            if free and (best is None or node.in_flight < best.in_flight):
                best = node
        return best

    async def _lost(self, node: _Node, arm: str) -> None:
        """A worker is gone: forget it and return its provider permits."""
        node.workers.pop(arm, None)
        for limiter in self.limiters.values():
            with contextlib.suppress(*LOST):
                await limiter.release_lost.remote(f"{node.label}/{arm}")

    async def _dispatch(self, plan: list[PlannedEpisode]) -> None:
        run = self.run
        queues: dict[str, collections.deque[EpisodeJob]] = {}
        for p in plan:  # one queue per arm: a lost arm never holds the others back
            queues.setdefault(p.arm.name, collections.deque()).append(p.job)
        stranded: list[EpisodeJob] = []
        limiter_of = {p.arm.name: self.limiters.get(p.arm.agent.provider or "none") for p in plan}
        delivered: set[str] = set()
        in_flight: dict[asyncio.Task[Any], tuple[EpisodeJob, _Node]] = {}
        progress = run.new_progress()
        wall0 = asyncio.get_running_loop().time()

        def launch() -> None:
            """Give free slots to the arms' next jobs, one arm after another."""
            launched = True
            while launched:
                launched = False
                for arm, queue in queues.items():
                    if queue and not any(arm in n.workers for n in self.nodes.values()):
                        stranded.extend(queue)  # no live worker left for this arm
                        queue.clear()
                    target = self._pick(queue[0]) if queue else None
                    if target is None:
                        continue
                    job = queue.popleft()
                    ref = target.workers[arm].run.remote(job, limiter_of.get(arm))
                    target.in_flight += 1
                    in_flight[asyncio.create_task(_await(ref), name=job.key)] = (job, target)
                    launched = True

        with progress:
            total = progress.add_task("episodes", total=len(plan), errors=0)
            for node in self.nodes.values():
                node.bar = progress.add_task(f"  node {node.label}", total=None, errors="-")
            try:
                while True:
                    launch()
                    if not in_flight:
                        break
                    done, _ = await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                    for fut in done:
                        job, node = in_flight.pop(fut)
                        node.in_flight -= 1
                        try:
                            ep: Episode = fut.result()
                        except LOST:
                            await self._lost(node, job.arm)
                            queues[job.arm].appendleft(job)  # re-run elsewhere; never recorded
                            run.summary.requeued += 1
                            continue
                        except ray.exceptions.RayTaskError as exc:
                            raise HarnessError(f"episode {job.key}: {exc.cause}") from exc
                        if ep.key in delivered:  # pragma: no cover - one dispatch per key
                            continue
                        delivered.add(ep.key)
                        await run.deliver(ep.model_copy(update={"node": node.label}))
                        run.summary.per_node[node.label] += 1
                        progress.update(total, advance=1, errors=run.error_count())
                        progress.update(node.bar, advance=1)
            finally:
                for fut in in_flight:
                    fut.cancel()
                await asyncio.gather(*in_flight, return_exceptions=True)
                run.summary.episodes_wall_s += asyncio.get_running_loop().time() - wall0
        if stranded:
            arms = sorted({j.arm for j in stranded})
            raise HarnessError(
                f"no live Ray worker left for arm(s) {', '.join(arms)}: {len(stranded)} "
                "episode(s) not run; the others are in the journal (resume the run later)"
            )

    async def _stop(self) -> None:
        stops = [
            (arm, node, worker.stop.remote())
            for node in self.nodes.values()
            for arm, worker in node.workers.items()
        ]
        results = await asyncio.gather(*(_await(r) for _, _, r in stops), return_exceptions=True)
        for (arm, _, _), res in zip(stops, results, strict=True):
            if isinstance(res, list):
                self.run.remote_tools.setdefault(arm, res)
        for name, limiter in self.limiters.items():
            with contextlib.suppress(*LOST, GetTimeoutError):
                self.limiter_stats[name] = await limiter.stats.remote()
        self.run.summary.provider_limits = dict(self.limiter_stats)
        for node in self.nodes.values():
            for worker in node.workers.values():
                with contextlib.suppress(Exception):
                    ray.kill(worker)
        for limiter in self.limiters.values():
            with contextlib.suppress(Exception):
                ray.kill(limiter)
