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
from typing import TYPE_CHECKING, Any

from dabench.errors import UserInputError
from dabench.recordfile import read_record_file
from dabench.tasks.loader import SuiteItem, TaskSet, item_hash
from dabench.tasks.model import Grading, Protocol, Truth, TruthLock
from dabench.world.model import WorldManifest
from dabench.world.source import DataFingerprint, OpenWorld, open_world

if TYPE_CHECKING:
    from dabench.tasks.engines import Engine

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
    return open_world(world_dir).ids()


def world_identity(world_dir: Path) -> str:
    """The hash a lock and a run bind to: a built world's ``world_hash``, or an external
    world's hash over its knowledge files and data fingerprint."""
    return open_world(world_dir).world_hash


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


def _run(con: Engine, sql: str, where: str) -> tuple[list[str], list[list[Any]]]:
    from dabench.interruptible import QueryTimeout

    what = "naive SQL" if where.endswith("(naive_sql)") else "truth SQL"
    try:
        columns, rows = con.run(sql)
        rows = [[_jsonable(v) for v in row] for row in rows]
    except QueryTimeout as exc:
        raise UserInputError(
            f"{where}: {what} took longer than {exc.timeout_s:g} s on the world and was "
            "interrupted; make it cheaper"
        ) from exc
    except Exception as exc:  # duckdb.Error, psycopg.Error
        raise UserInputError(f"{where}: truth SQL failed on the world: {exc}") from exc
    return columns, rows


def world_engine(world: OpenWorld) -> Engine:
    """How truth SQL runs on ``world``: DuckDB (file or Parquet views) or PostgreSQL."""
    from dabench.tasks.engines import duckdb_engine, postgres_engine

    if world.dsn is not None:
        return postgres_engine(world.dsn)
    return duckdb_engine(world.connect(), f"{world.source.engine} {world.location}")


def _sql_for(grading: Grading, sql: str, con: Engine) -> str:
    from dabench.tasks.engines import to_postgres, truth_sql_for

    if con.dialect != "postgres":
        return sql
    if sql == grading.truth_sql:
        return truth_sql_for(grading, "postgres") or to_postgres(sql)
    return to_postgres(sql)


def _truth(grading: Grading, con: Engine, ids: set[str], where: str, thash: str) -> Truth:
    truth = Truth(kind=grading.kind, task_hash=thash, entities=list(grading.entities))
    unknown = [e for e in grading.entities if e not in ids]
    if unknown:
        raise UserInputError(f"{where}: entities not in the world's catalog: {', '.join(unknown)}")
    if grading.truth_sql:
        truth.columns, truth.rows = _run(con, _sql_for(grading, grading.truth_sql, con), where)
        if grading.kind == "numeric" or grading.also_numeric:
            truth.value = _first_number(truth.rows, where)
    if grading.naive_sql:
        _, naive_rows = _run(con, _sql_for(grading, grading.naive_sql, con), where + " (naive_sql)")
        truth.naive_value = _first_number(naive_rows, where + " (naive_sql)")
    return truth


def gradings(item: SuiteItem) -> list[tuple[str, Grading]]:
    """A task's grading, or each graded step of a protocol, with its lock key."""
    if isinstance(item, Protocol):
        return [(f"{item.id}/{s.name}", s.grading) for s in item.steps if s.grading is not None]
    return [(item.id, item.grading)]


def compute_lock(task_set: TaskSet, world_dir: Path) -> TruthLock:
    """Evaluate every task's truth against the world (read-only) and bind it to the world
    (a built world's hash; an external world's hash and data fingerprint)."""
    world = open_world(world_dir)
    ids = world.ids()
    truths: dict[str, Truth] = {}
    con = world_engine(world)
    try:
        for item in task_set.items:
            thash = item_hash(item)
            where = task_set.sources.get(item.id, item.id)
            for key, grading in gradings(item):
                truths[key] = _truth(grading, con, ids, f"{where}: task {key!r}", thash)
    finally:
        con.close()
    return TruthLock(
        world_hash=world.world_hash,
        task_set_hash=task_set.hash(),
        truths=truths,
        data_fingerprint=world.fingerprint(),
    )


def write_lock(lock: TruthLock, path: Path) -> Path:
    """Write a lock file atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(
        json.dumps(
            lock.model_dump(
                mode="json",
                exclude={"data_fingerprint"} if lock.data_fingerprint is None else None,
            ),
            indent=2,
            sort_keys=True,
        )
        + "\n",
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


def check_lock(
    lock: TruthLock,
    task_set: TaskSet,
    world_hash: str,
    path: Path | str,
    fingerprint: DataFingerprint | None = None,
) -> None:
    """Refuse a stale lock: another world, a changed task, or a task it does not cover. With
    the world's current ``fingerprint``, a changed warehouse is reported table by table."""
    if lock.world_hash != world_hash:
        changed = ""
        if fingerprint is not None and lock.data_fingerprint is not None:
            diffs = fingerprint.changes(lock.data_fingerprint)
            changed = (
                " (the warehouse changed: " + "; ".join(diffs[:8]) + ")"
                if diffs
                else " (same data; the knowledge files changed)"
            )
        raise UserInputError(
            f"{path}: stale lock: it was computed on world {lock.world_hash[:12]}, the run uses "
            f"world {world_hash[:12]}{changed}; re-run `dabench tasks lock --world DIR`"
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
