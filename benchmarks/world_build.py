"""Measure ``dabench world build`` against DuckDB's own row-generation speed.

For each scale, prints the build time, rows per second, and the time DuckDB takes to write
the same number of rows with ``INSERT INTO t SELECT ... FROM range(n)`` into a fresh database
file (the practical limit), with one thread (as the deterministic build uses for writing)
and with all cores. Wall-clock and CPU seconds (all threads of this process) are both shown:
on a shared machine the CPU figures are the steadier ones. Usage::

    python3 benchmarks/world_build.py [--scales 1,10,100] [--seed 930]
    python3 benchmarks/world_build.py --margin-seeds 40   # trap gaps over seeds 0..39, scale 1

The second form builds scale 1 for many seeds and prints, per trap, the smallest relative
gap |correct - naive| / |correct| seen (the build refuses gaps of 5% or less).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

from dabench.world import TrapInvariantError, build_world
from dabench.world.warehouse import OFFLINE_CONFIG

LIMIT_SQL = """
INSERT INTO t
SELECT i,
       (hash(i, 'a') % 1000000)::BIGINT,
       (hash(i, 'b') % 1000000)::DOUBLE / 100,
       ['web', 'store', 'partner'][1 + (hash(i, 'c') % 3)::BIGINT],
       DATE '2023-01-01' + (hash(i, 'd') % 1096)::INTEGER,
       TIMESTAMP '2023-01-01' + to_seconds((hash(i, 'e') % 94694400)::BIGINT)
FROM range({n}) r(i)
"""


def duckdb_limit(rows: int, threads: int, workdir: Path) -> tuple[float, float]:
    """(wall, CPU) seconds DuckDB takes to generate and persist ``rows`` six-column rows."""
    path = workdir / f"limit-{threads}.duckdb"
    path.unlink(missing_ok=True)
    con = duckdb.connect(str(path), config={**OFFLINE_CONFIG, "threads": threads})
    try:
        con.execute("SET enable_progress_bar = false")
        con.execute(
            "CREATE TABLE t (id BIGINT, a BIGINT, b DOUBLE, c VARCHAR, d DATE, e TIMESTAMP)"
        )
        started, cpu = time.perf_counter(), time.process_time()
        con.execute(LIMIT_SQL.format(n=rows))
        con.execute("CHECKPOINT")
        return time.perf_counter() - started, time.process_time() - cpu
    finally:
        con.close()
        path.unlink(missing_ok=True)


def _pair(seconds: tuple[float, float]) -> str:
    return f"{seconds[0]:.2f} / {seconds[1]:.2f}"


def _ratio(build: tuple[float, float], limit: tuple[float, float]) -> str:
    return f"{build[0] / limit[0]:.1f}x / {build[1] / limit[1]:.1f}x"


def trap_margins(n_seeds: int, console: Console) -> None:
    """Build scale 1 for seeds 0..n-1 and print the smallest relative gap of every trap."""
    smallest: dict[str, tuple[float, int]] = {}
    failures: list[str] = []
    workdir = Path(tempfile.mkdtemp(prefix="dabench-margins-"))
    try:
        for seed in range(n_seeds):
            out = workdir / f"w{seed}"
            try:
                manifest = build_world(seed, 1, out)
            except TrapInvariantError as exc:
                failures.append(f"seed {seed}: {exc}")
                continue
            shutil.rmtree(out)
            for trap in manifest.traps:
                gap = abs(trap.correct_answer - trap.naive_answer) / abs(trap.correct_answer)
                if trap.id not in smallest or gap < smallest[trap.id][0]:
                    smallest[trap.id] = (gap, seed)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    table = Table(title=f"smallest relative trap gap over seeds 0..{n_seeds - 1} (scale 1)")
    for col in ("trap", "smallest gap", "at seed"):
        table.add_column(col, justify="right" if col != "trap" else "left")
    for trap_id, (gap, seed) in sorted(smallest.items(), key=lambda kv: kv[1][0]):
        table.add_row(trap_id, f"{gap:.1%}", str(seed))
    console.print(table)
    console.print(f"builds refused by the invariant: {len(failures)}", highlight=False)
    for failure in failures:
        console.print(failure, highlight=False, markup=False)


def main() -> None:
    """Run the measurements and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="1,10,100")
    parser.add_argument("--seed", type=int, default=930)
    parser.add_argument("--margin-seeds", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="seconds: scale 1 only")
    args = parser.parse_args()
    if args.quick:
        args.scales = "1"
    if args.margin_seeds:
        trap_margins(args.margin_seeds, Console(width=160))
        return
    scales = [int(s) for s in args.scales.split(",")]
    console = Console(width=160)
    cores = os.cpu_count() or 1
    console.print(
        f"duckdb {duckdb.__version__}, {cores} cores, load average before: "
        f"{os.getloadavg()[0]:.2f}",
        highlight=False,
    )
    table = Table(title="world build vs DuckDB INSERT ... SELECT FROM range(n) (wall s / CPU s)")
    for col in (
        "scale",
        "rows",
        "orders",
        "build",
        "rows/s (wall)",
        "limit, 1 thread",
        f"limit, {cores} threads",
        "build / limit(1)",
        f"build / limit({cores})",
    ):
        table.add_column(col, justify="right")
    workdir = Path(tempfile.mkdtemp(prefix="dabench-bench-"))
    try:
        for scale in scales:
            out = workdir / f"w{scale}"
            started, cpu = time.perf_counter(), time.process_time()
            manifest = build_world(args.seed, scale, out)
            build = (time.perf_counter() - started, time.process_time() - cpu)
            shutil.rmtree(out)
            rows = sum(manifest.table_rows.values())
            limit_1 = duckdb_limit(rows, 1, workdir)
            limit_n = duckdb_limit(rows, cores, workdir)
            table.add_row(
                str(scale),
                f"{rows:,}",
                f"{manifest.table_rows['sales.orders']:,}",
                _pair(build),
                f"{rows / build[0]:,.0f}",
                _pair(limit_1),
                _pair(limit_n),
                _ratio(build, limit_1),
                _ratio(build, limit_n),
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    console.print(table)
    console.print(f"load average after: {os.getloadavg()[0]:.2f}", highlight=False)


if __name__ == "__main__":
    main()
