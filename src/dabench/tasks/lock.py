"""The truth lock: every task's ground truth evaluated by SQL against one world.

``dabench tasks lock --world DIR`` writes ``tasks.lock.json`` (a :class:`TruthLock`) bound to
the world's hash and to each task's canonical hash. A run refuses a lock that is stale: another
world, or a task whose content changed since it was locked, or a task missing from it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
from pathlib import Path
from typing import Any

import duckdb

from dabench.errors import UserInputError
from dabench.recordfile import read_record_file
from dabench.tasks.loader import SuiteItem, TaskSet, item_hash
from dabench.tasks.model import Grading, Protocol, Truth, TruthLock
from dabench.world.model import Catalog, WorldManifest

LOCK_FILE = "tasks.lock.json"


def read_world_manifest(world_dir: Path) -> WorldManifest:
    """``world.json`` of a built world directory."""
    return read_record_file(
        world_dir / "world.json",
        WorldManifest,
        what="world manifest",
        missing=f"{world_dir}: not a built world (no world.json)",
    )


def catalog_ids(world_dir: Path) -> set[str]:
    """Every id a task may name: datasets, columns, glossary terms, curated queries, pages."""
    path = world_dir / "catalog.json"
    ids: set[str] = set()
    if path.exists():
        catalog = Catalog.model_validate_json(path.read_bytes())
        for ds in catalog.datasets:
            ids.add(ds.id)
            ids.update(f"{ds.id}.{c.name}" for c in ds.columns)
        ids.update(g.id for g in catalog.glossary)
        ids.update(q.id for q in catalog.curated_queries)
    pages = world_dir / "knowledge"
    if pages.is_dir():
        ids.update(p.stem for p in pages.glob("*.md"))
    return ids


def _jsonable(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _first_number(rows: list[list[Any]], where: str) -> float:
    if not rows or not rows[0]:
        raise UserInputError(f"{where}: truth SQL returned no rows (expected one number)")
    cell = rows[0][0]
    try:
        return float(cell)
    except (TypeError, ValueError) as exc:
        raise UserInputError(f"{where}: truth SQL's first cell is {cell!r}, not a number") from exc


def _run(con: duckdb.DuckDBPyConnection, sql: str, where: str) -> tuple[list[str], list[list[Any]]]:
    try:
        cur = con.execute(sql)
        columns = [d[0] for d in cur.description or []]
        rows = [[_jsonable(v) for v in row] for row in cur.fetchall()]
    except duckdb.Error as exc:
        raise UserInputError(f"{where}: truth SQL failed on the world: {exc}") from exc
    return columns, rows


def _truth(
    grading: Grading, con: duckdb.DuckDBPyConnection, ids: set[str], where: str, thash: str
) -> Truth:
    truth = Truth(kind=grading.kind, task_hash=thash, entities=list(grading.entities))
    unknown = [e for e in grading.entities if e not in ids]
    if unknown:
        raise UserInputError(f"{where}: entities not in the world's catalog: {', '.join(unknown)}")
    if grading.truth_sql:
        truth.columns, truth.rows = _run(con, grading.truth_sql, where)
        if grading.kind == "numeric" or grading.also_numeric:
            truth.value = _first_number(truth.rows, where)
    if grading.naive_sql:
        _, naive_rows = _run(con, grading.naive_sql, where + " (naive_sql)")
        truth.naive_value = _first_number(naive_rows, where + " (naive_sql)")
    return truth


def gradings(item: SuiteItem) -> list[tuple[str, Grading]]:
    """A task's grading, or each graded step of a protocol, with its lock key."""
    if isinstance(item, Protocol):
        return [(f"{item.id}/{s.name}", s.grading) for s in item.steps if s.grading is not None]
    return [(item.id, item.grading)]


def compute_lock(task_set: TaskSet, world_dir: Path) -> TruthLock:
    """Evaluate every task's truth against the world (read-only) and bind it to the world."""
    manifest = read_world_manifest(world_dir)
    ids = catalog_ids(world_dir)
    warehouse = world_dir / "warehouse.duckdb"
    if not warehouse.exists():
        raise UserInputError(f"{world_dir}: no warehouse.duckdb")
    truths: dict[str, Truth] = {}
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        for item in task_set.items:
            thash = item_hash(item)
            where = task_set.sources.get(item.id, item.id)
            for key, grading in gradings(item):
                truths[key] = _truth(grading, con, ids, f"{where}: task {key!r}", thash)
    finally:
        con.close()
    return TruthLock(world_hash=manifest.world_hash, task_set_hash=task_set.hash(), truths=truths)


def write_lock(lock: TruthLock, path: Path) -> Path:
    """Write a lock file atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(
        json.dumps(lock.model_dump(mode="json"), indent=2, sort_keys=True) + "\n",
        encoding="utf-8",
    )
    os.replace(tmp, path)
    return path


def read_lock(path: Path) -> TruthLock:
    """Read a lock file."""
    return read_record_file(
        path,
        TruthLock,
        what="lock file",
        missing=f"{path}: no such lock file (run `dabench tasks lock --world DIR`)",
    )


def check_lock(lock: TruthLock, task_set: TaskSet, world_hash: str, path: Path | str) -> None:
    """Refuse a stale lock: another world, a changed task, or a task it does not cover."""
    if lock.world_hash != world_hash:
        raise UserInputError(
            f"{path}: stale lock: it was computed on world {lock.world_hash[:12]}, the run uses "
            f"world {world_hash[:12]}; re-run `dabench tasks lock --world DIR`"
        )
    for item in task_set.items:
        thash = item_hash(item)
        for key, _ in gradings(item):
            truth = lock.truths.get(key)
            if truth is None:
                raise UserInputError(f"{path}: stale lock: task {key!r} is not in it")
            if truth.task_hash != thash:
                raise UserInputError(
                    f"{path}: stale lock: task {key!r} changed since it was locked "
                    f"({task_set.sources.get(item.id, '?')})"
                )
