"""``dabench tasks validate`` on freshly drawn worlds: the 10-seed check of docs/world.md.

Draws seeds as ``dabench run --world-seed random`` does (:func:`dabench.runner.world_seed.
draw_world_seed`: a draw whose world the build refuses, or on which the static task checks
fail, is reported and replaced), then runs the full validation on each accepted world: the
static checks, the oracle over every built-in task on every arm (a0..a3 by default, real
reference-platform processes) and the naive answer of every trap task against its grader.
Prints one row per seed: the draws it took, the world hash, the oracle's episodes and
failures, naive answers the grader accepted, the smallest gap between a planted trap's
correct and naive answer, the careless variants that equal the truth on that world (notes,
not failures), the seconds, and the verdict. Usage::

    python3 benchmarks/world_seeds.py [--seeds 10] [--scale 1] [--arms a0,a1,a2,a3]
    python3 benchmarks/world_seeds.py --seed-list 7,22,930       # named seeds, no draw

Worlds are built into the world cache ($DABENCH_CACHE/worlds), about 10 MB each at scale 1.
Exit code 1 when any seed fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from dabench.runner.world_seed import draw_world_seed
from dabench.tasks.loader import load_builtin_tasks
from dabench.tasks.lock import read_world_manifest
from dabench.validation.tasks import validate
from dabench.world.cache import ensure_world, world_cache_dir


def trap_gap(world_dir: Path) -> tuple[float, str]:
    """The smallest relative gap |correct - naive| / |correct| over the world's traps."""
    traps = read_world_manifest(world_dir).traps
    gaps = [
        (abs(t.correct_answer - t.naive_answer) / (abs(t.correct_answer) or 1.0), t.id)
        for t in traps
    ]
    return min(gaps)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="Seeds to draw.")
    parser.add_argument("--seed-list", default="", help="Comma-separated seeds instead.")
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--arms", default="a0,a1,a2,a3")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--quick", action="store_true", help="seed 7 on a0 only (checks the script runs)"
    )
    args = parser.parse_args()
    if args.quick:
        args.seed_list, args.arms = "7", "a0"
    tasks = load_builtin_tasks()
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    refused: list[str] = []
    picks: list[tuple[int, int]] = []  # (seed, draws it took)
    if args.seed_list:
        picks = [(int(s), 0) for s in args.seed_list.split(",") if s.strip()]
    else:
        for _ in range(args.seeds):
            before = len(refused)
            seed = draw_world_seed(args.scale, tasks, say=refused.append)
            picks.append((seed, len(refused) - before + 1))
    for line in refused:
        print(f"refused draw: {line}", file=sys.stderr)
    print(
        f"| seed | draws | world | items | episodes ({','.join(arms)}) | oracle failures "
        "| naive accepted | other issues | smallest trap gap | variants equal to truth "
        "| seconds | verdict |"
    )
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |")
    failed = 0
    for seed, draws in picks:
        world = ensure_world(seed, args.scale, world_cache_dir())
        t0 = time.perf_counter()
        report = validate(world, tasks, arms=arms, concurrency=args.concurrency, progress=False)
        seconds = time.perf_counter() - t0
        oracle = sum(1 for i in report.issues if i.check == "oracle")
        naive = sum(1 for i in report.issues if i.check == "naive")
        other = len(report.issues) - oracle - naive
        gap, gap_trap = trap_gap(world)
        failed += not report.ok
        print(
            f"| {seed} | {draws or '-'} | `{read_world_manifest(world).world_hash[:12]}` "
            f"| {report.items} | {report.episodes} | {oracle} | {naive} | {other} "
            f"| {gap:.1%} (`{gap_trap}`) | {len(report.notes)} | {seconds:.0f} "
            f"| {'pass' if report.ok else 'FAIL'} |",
            flush=True,
        )
        for issue in report.issues[:10]:
            print(f"  {issue.check} {issue.item} {issue.arm}: {issue.detail}", file=sys.stderr)
    total = sum(d for _, d in picks)
    print(
        f"\n{len(picks) - failed}/{len(picks)} seeds pass"
        + (f"; {total} draws for {len(picks)} accepted seeds" if not args.seed_list else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
