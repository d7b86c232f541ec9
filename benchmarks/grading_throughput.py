"""Grading throughput: deterministic grades per second, exec_sql latency, judge-cache lookups.

Builds everything it needs in a temporary directory (no world or model needed):

- ``grade_run`` over a run directory with N episodes (numeric, entity, format, refusal mix):
  episodes graded per second, end to end (journal load, lock check, grading, grades.jsonl).
- ``exec_sql`` on a DuckDB warehouse with R rows: p50 / p95 per graded episode (guarded
  execution on a fresh read-only connection + comparison under set semantics).
- Judge cache: p50 lookup time of a cached verdict (what a re-grade costs per judged episode).

    python benchmarks/grading_throughput.py [--episodes 2000] [--rows 200000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

from dabench.grading import grade_run
from dabench.grading.exec_sql import check_exec_sql, run_query
from dabench.journal.records import Episode, RunManifest, ToolCall
from dabench.journal.store import Journal, write_manifest
from dabench.judge.cache import JudgeCache, cache_key
from dabench.tasks.loader import TaskSet, dump_tasks, item_hash
from dabench.tasks.lock import write_lock
from dabench.tasks.model import Task, Truth, TruthLock

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ANSWERS = {
    "num": "The raw sum is 123,450 cents.\nFINAL ANSWER: $1,234.50",
    "ent": "Avoid legacy.orders.\nFINAL ANSWER: sales.orders",
    "fmt": "FINAL ANSWER:\n| region | total |\n|---|---|\n| north | 30 |\n| south | 11 |",
    "ref": "There is no column named loyalty_score, so this cannot be computed.",
}


def _tasks() -> list[Task]:
    base = {"suite": "s2", "category": "analytical", "difficulty": "medium", "prompt": "q"}
    gradings = {
        "num": {"kind": "numeric", "truth_sql": "SELECT 1"},
        "ent": {"kind": "entity", "entities": ["sales.orders"], "wrong_aliases": ["legacy.orders"]},
        "fmt": {
            "kind": "format",
            "format": {"kind": "markdown_table", "columns": ["region", "total"]},
        },
        "ref": {"kind": "refusal"},
    }
    return [Task.model_validate({**base, "id": k, "grading": g}) for k, g in gradings.items()]


def _episode(task_id: str, attempt: int, tool_calls: list[ToolCall] | None = None) -> Episode:
    return Episode(
        key=f"a0/{task_id}/{attempt}",
        run_id="bench",
        arm="a0",
        task_id=task_id,
        attempt=attempt,
        suite="s2",
        category="analytical",
        difficulty="medium",
        status="completed",
        agent="replay",
        target="reference:a0",
        prompts=["q"],
        answers=[ANSWERS.get(task_id, "done")],
        tool_calls=tool_calls or [],
        wall_ms=1500.0,
        started_at=T0,
        finished_at=T0,
    )


def bench_grade_run(root: Path, episodes: int) -> tuple[int, float]:
    """Grade a run of ``episodes`` episodes; return (graded, seconds)."""
    run = root / "run"
    tasks = TaskSet(tasks=_tasks())
    dump_tasks(tasks, run / "tasks.yaml")
    truths = {
        "num": Truth(kind="numeric", value=1234.5, naive_value=123450.0),
        "ent": Truth(kind="entity", entities=["sales.orders"]),
        "fmt": Truth(kind="format"),
        "ref": Truth(kind="refusal"),
    }
    for task in tasks.tasks:
        truths[task.id] = truths[task.id].model_copy(update={"task_hash": item_hash(task)})
    write_lock(
        TruthLock(world_hash="w", task_set_hash=tasks.hash(), truths=truths),
        run / "tasks.lock.json",
    )
    write_manifest(
        run,
        RunManifest(
            run_id="bench",
            dabench_version="0",
            git_commit=None,
            python_version="3.11",
            experiment={},
            experiment_hash="e",
            world_seed=0,
            world_scale=1,
            world_hash="w",
            task_set_hash=tasks.hash(),
            task_ids=list(truths),
            k=episodes // 4,
            arms=[],
            started_at=T0,
        ),
    )
    journal = Journal(run)
    ids = list(truths)
    for i in range(episodes):
        journal.append(_episode(ids[i % 4], i // 4))
    start = time.perf_counter()
    grades = grade_run(run, manifest_judge=False)
    seconds = time.perf_counter() - start
    assert all(g.passed for g in grades), [g.reason for g in grades if not g.passed][:3]
    return len(grades), seconds


def bench_exec_sql(root: Path, rows: int, repeats: int = 30) -> tuple[float, float]:
    """p50 / p95 milliseconds of one exec_sql grade on a ``rows``-row table."""
    path = root / "warehouse.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA sales")
    con.execute(
        "CREATE TABLE sales.orders AS SELECT range AS id, 'r' || (range % 7) AS region, "
        f"(range % 1000) / 10.0 AS amount FROM range({rows})"
    )
    con.close()
    sql = "SELECT region, SUM(amount) AS total FROM sales.orders GROUP BY region"
    columns, gold = run_query(path, sql)
    episode = _episode("sql", 0, [ToolCall(index=0, name="sql_query", arguments={"sql": sql})])
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        check = check_exec_sql(episode, columns, [list(r) for r in gold], warehouse=path)
        times.append((time.perf_counter() - start) * 1000)
        assert check.passed, check.reason
    return statistics.median(times), statistics.quantiles(times, n=20)[-1]


def bench_cache(root: Path, n: int = 2000) -> float:
    """p50 microseconds of one cached-verdict lookup."""
    cache = JudgeCache(root / "judge")
    keys = [cache_key({"i": i}) for i in range(n)]
    for key in keys:
        cache.put(key, '{"claims": []}')
    times = []
    for key in keys:
        start = time.perf_counter()
        assert cache.get(key) is not None
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def main() -> None:
    """Run the three measurements and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="seconds: 100 episodes, 5,000 rows (10 grades), 200 cache entries",
    )
    args = parser.parse_args()
    if args.quick:
        args.episodes, args.rows = 100, 5000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        graded, seconds = bench_grade_run(root, args.episodes)
        p50, p95 = bench_exec_sql(root, args.rows, 10 if args.quick else 30)
        lookup = bench_cache(root, 200 if args.quick else 2000)  # each put is a commit
    table = Table(title="grading throughput")
    table.add_column("measurement")
    table.add_column("figure", justify="right")
    table.add_row(
        f"grade_run, {graded} deterministic episodes", f"{graded / seconds:,.0f} episodes/s"
    )
    table.add_row(f"grade_run wall time ({graded} episodes)", f"{seconds:.2f} s")
    table.add_row(f"exec_sql grade p50 ({args.rows:,} rows)", f"{p50:.1f} ms")
    table.add_row(f"exec_sql grade p95 ({args.rows:,} rows)", f"{p95:.1f} ms")
    table.add_row("judge cache hit p50", f"{lookup:.0f} µs")
    Console().print(table)


if __name__ == "__main__":
    main()
