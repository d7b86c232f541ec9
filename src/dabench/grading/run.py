"""Grade a whole run directory from its journal and write ``grades.jsonl``."""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.progress import Progress

from dabench.blocking import blocking
from dabench.errors import UserInputError
from dabench.grading.episode import agrade_episode, grade_protocol_episode
from dabench.grading.scores import ScoreConfig
from dabench.grading.tool_equivalents import (
    manifest_offered_tools,
    manifest_roles,
    manifest_sql_dialects,
)
from dabench.journal.records import Episode, Grade, RunManifest
from dabench.journal.store import MANIFEST_FILE, Journal, read_manifest, write_grades
from dabench.judge.factory import make_judge
from dabench.judge.judge import Judge
from dabench.tasks.loader import SuiteItem, TaskSet, load_builtin_tasks, load_tasks
from dabench.tasks.lock import check_lock, read_lock
from dabench.tasks.model import Protocol, Task, TruthLock
from dabench.world.source import is_world_dir, open_world

LOCK_FILE = "tasks.lock.json"
JUDGE_CONCURRENCY = 4


def _task_set(run_dir: Path, tasks: TaskSet | Iterable[SuiteItem] | Path | None) -> TaskSet:
    if isinstance(tasks, TaskSet):
        return tasks
    if isinstance(tasks, Path):
        return load_tasks([tasks])
    if tasks is not None:
        ts = TaskSet()
        for item in tasks:
            if isinstance(item, Protocol):
                ts.protocols.append(item)
            else:
                ts.tasks.append(item)
        return ts
    for candidate in (run_dir / "tasks", run_dir / "tasks.yaml"):
        if candidate.exists():
            return load_tasks([candidate])
    return load_builtin_tasks()


def _lock(run_dir: Path, lock: TruthLock | Path | None) -> tuple[TruthLock, str]:
    if isinstance(lock, TruthLock):
        return lock, "<lock>"
    path = lock if lock is not None else run_dir / LOCK_FILE
    return read_lock(path), str(path)


def _world_dir(manifest: RunManifest | None) -> Path | None:
    """The run's world: the experiment's ``world.dir``, else the world cache entry for the
    manifest's seed and scale (built once by ``dabench.world.ensure_world``)."""
    if manifest is None:
        return None
    world: Any = manifest.experiment.get("world")
    value = world.get("dir") if isinstance(world, dict) else None
    if isinstance(value, str) and Path(value).is_dir():
        return Path(value)
    ensure_world = getattr(importlib.import_module("dabench.world"), "ensure_world", None)
    if ensure_world is None:
        return None
    root = os.environ.get("DABENCH_CACHE")
    cache = (Path(root) if root else Path.home() / ".cache" / "dabench") / "worlds"
    return Path(ensure_world(manifest.world_seed, manifest.world_scale, cache))


def _manifest_judge(manifest: RunManifest | None) -> Judge | None:
    """The judge the experiment names (``judge: {model: provider:model, base_url: ...}``)."""
    spec = manifest.judge if manifest is not None else None
    if not spec or not isinstance(spec.get("model"), str):
        return None
    settings = {k: v for k, v in spec.items() if k in ("base_url", "timeout")}
    return make_judge(spec["model"], **settings)


def _warehouse(world: Path | None) -> Path | None:
    if world is None:
        return None
    if is_world_dir(world):
        return open_world(world).warehouse_path  # the world's DuckDB file (Parquet: its copy)
    path = world / "warehouse.duckdb" if world.is_dir() else world  # a bare warehouse
    if not path.is_file():
        raise UserInputError(f"{path}: no warehouse.duckdb (is {world} a world?)")
    return path


async def agrade_run(
    run_dir: Path | str,
    *,
    tasks: TaskSet | Iterable[SuiteItem] | Path | None = None,
    lock: TruthLock | Path | None = None,
    judge: Judge | None = None,
    world: Path | None = None,
    score_config: ScoreConfig | None = None,
    judge_all: bool = False,
    progress: bool = False,
    write: bool = True,
    manifest_judge: bool = True,
) -> list[Grade]:
    """Grade every episode of ``run_dir`` (re-grading replaces ``grades.jsonl``).

    Defaults: the lock is ``RUN_DIR/tasks.lock.json`` (checked against the manifest's world
    hash), tasks come from ``RUN_DIR/tasks[.yaml]`` or the built-in suites, and the world
    (needed by exec_sql only) from the manifest's ``experiment.world.dir`` or the world cache.
    Without ``judge``, the experiment's judge (manifest ``judge.model``) is used unless
    ``manifest_judge`` is False.
    """
    run_dir = Path(run_dir)
    episodes = Journal(run_dir).load()
    manifest = read_manifest(run_dir) if (run_dir / MANIFEST_FILE).exists() else None
    task_set = _task_set(run_dir, tasks)
    truth_lock, lock_path = _lock(run_dir, lock)
    used = {e.task_id for e in episodes}
    items = {item.id: item for item in task_set.items}
    if manifest is not None:
        check_lock(truth_lock, task_set.subset(used), manifest.world_hash, lock_path)
    exec_sql_tasks = {t.id for t in task_set.tasks if t.grading.kind == "exec_sql"}
    needs_world = any(e.task_id in exec_sql_tasks for e in episodes)
    if judge is None and manifest_judge:
        judge = _manifest_judge(manifest)
    warehouse = _warehouse(world or (_world_dir(manifest) if needs_world else None))
    semaphore = asyncio.Semaphore(JUDGE_CONCURRENCY)
    offered = manifest_offered_tools(manifest)
    roles = manifest_roles(manifest)
    dialects = manifest_sql_dialects(manifest)

    async def one(episode: Episode) -> Grade:
        item = items.get(episode.task_id)
        if isinstance(item, Protocol) or (item is None and episode.steps):
            return grade_protocol_episode(episode, item if isinstance(item, Protocol) else None)
        if not isinstance(item, Task):
            return Grade(
                key=episode.key,
                passed=False,
                score=0.0,
                kind="unknown",
                reason=f"not graded: task {episode.task_id!r} is not in the task set",
                excluded=True,
            )
        async with semaphore:
            return await agrade_episode(
                episode,
                item,
                truth_lock.truths.get(item.id),
                judge=judge,
                score_config=score_config,
                warehouse=warehouse,
                judge_all=judge_all,
                offered_tools=offered.get(episode.arm),
                roles=roles.get(episode.arm),
                sql_dialect=dialects.get(episode.arm, "duckdb"),
            )

    grades: list[Grade] = []
    with Progress(disable=not progress, transient=True) as bar:
        job = bar.add_task("grading", total=len(episodes))
        for grade in await asyncio.gather(*(one(e) for e in episodes)):
            grades.append(grade)
            bar.advance(job)
    if write:
        write_grades(run_dir, grades)
    return grades


grade_run = blocking(
    agrade_run,
    name="grade_run",
    doc="Synchronous :func:`agrade_run` (do not call from inside a running event loop).",
)
