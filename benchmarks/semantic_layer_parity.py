"""The full MetricFlow parity check of the dbt export, timed (CI runs a subset of it).

Builds the world (or takes ``--world``), exports it with ``world export --dbt``, builds the
project with dbt (the venv under the cache, installed on first use), runs every
metric-expressible task's MetricFlow query in one process and compares it with the gold.
Prints per task the gold and MetricFlow's answer, then the coverage per suite and the times
of the export, the dbt build and the parity run. Usage::

    python3 benchmarks/semantic_layer_parity.py [--world DIR] [--seed 930] [--scale 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from dabench.tasks.loader import load_builtin_tasks
from dabench.tasks.metric_parity import METRIC_QUERIES, coverage, parity
from dabench.world import build_world
from dabench.world.dbt_env import dbt_build, dbt_venv
from dabench.world.export_dbt import export_dbt
from dabench.world.load import load_world


def main() -> None:
    """Run the check and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=930)
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument(
        "--quick", action="store_true", help="the first 3 mapped tasks only (checks it runs)"
    )
    args = parser.parse_args()
    venv = dbt_venv()
    with tempfile.TemporaryDirectory(prefix="dabench-dbt-") as tmp:
        world_dir = args.world
        if world_dir is None:
            world_dir = Path(tmp) / "world"
            build_world(args.seed, args.scale, world_dir)
        world = load_world(world_dir)
        t0 = time.perf_counter()
        project = export_dbt(world, Path(tmp) / "dbt")
        t1 = time.perf_counter()
        dbt_build(project, venv=venv)
        t2 = time.perf_counter()
        tasks = load_builtin_tasks().tasks
        checked = [t for t in tasks if t.id in METRIC_QUERIES][:3] if args.quick else tasks
        rows = parity(world, project, checked, venv=venv)
        t3 = time.perf_counter()
    for r in rows:
        mark = "ok  " if r.passed else "FAIL"
        print(f"{mark} {r.task_id}: gold {r.gold} metricflow {r.answer} {r.error or ''}")
    for suite, (mapped, total) in coverage(tasks).items():
        print(f"coverage {suite}: {mapped}/{total} tasks metric-expressible")
    passed = sum(r.passed for r in rows)
    print(f"parity: {passed}/{len(rows)} equal the gold (world {world.world_hash[:16]})")
    print(
        f"export {t1 - t0:.1f}s, dbt build + parse {t2 - t1:.1f}s, "
        f"parity ({len(rows)} MetricFlow queries, one process) {t3 - t2:.1f}s"
    )


if __name__ == "__main__":
    main()
