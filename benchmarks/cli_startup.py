"""CPU time the ``dabench`` CLI spends before it does anything: ``--version``, ``--help`` and
every subcommand's ``--help``.

Each command runs in a fresh interpreter; its CPU time (user + system) is read from
``resource.getrusage(RUSAGE_CHILDREN)`` around the child, so a busy machine stretches the wall
clock but hardly the figure. The best of ``--repeat`` runs is printed, with its ratio to the
goal (0.3 s for ``--version``/``--help``, 0.5 s for a subcommand's help) and to a bare
``python -c pass``. CI pins the same property without timing: tests/harness/test_cli_startup.py
asserts that no heavy module is imported.

    python benchmarks/cli_startup.py [--repeat 3] [--only run,tasks]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
from typing import Any

import typer

ROOT_GOAL_S = 0.3
SUBCOMMAND_GOAL_S = 0.5


def _cpu_of(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best_cpu(argv: list[str], repeat: int) -> float:
    """The least CPU seconds of ``repeat`` runs of ``argv``."""
    return min(_cpu_of(argv) for _ in range(repeat))


def subcommand_paths() -> list[list[str]]:
    """Every leaf command of the CLI, e.g. ``["world", "build"]``."""
    from dabench.cli import app

    def walk(cmd: Any, path: list[str]) -> list[list[str]]:
        subs = getattr(cmd, "commands", None)
        if not subs:
            return [path]
        return [p for name, sub in sorted(subs.items()) for p in walk(sub, [*path, name])]

    return walk(typer.main.get_command(app), [])


def main() -> None:
    """Measure and print one line per command."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated first words to measure")
    parser.add_argument("--quick", action="store_true", help="seconds: 1 run, `run` only")
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.only = 1, "run"
    cli = [sys.executable, "-m", "dabench.cli"]
    bare = best_cpu([sys.executable, "-c", "pass"], args.repeat)
    rows: list[tuple[str, float, float]] = [
        ("--version", best_cpu([*cli, "--version"], args.repeat), ROOT_GOAL_S),
        ("--help", best_cpu([*cli, "--help"], args.repeat), ROOT_GOAL_S),
    ]
    only = {w for w in args.only.split(",") if w}
    for path in subcommand_paths():
        if only and path[0] not in only:
            continue
        cpu = best_cpu([*cli, *path, "--help"], args.repeat)
        rows.append((" ".join([*path, "--help"]), cpu, SUBCOMMAND_GOAL_S))
    print(f"python -c pass: {bare:.3f} s CPU (best of {args.repeat})")
    print(f"{'command':<34} {'CPU s':>7} {'/goal':>6} {'/bare':>6}")
    worst = 0.0
    for name, cpu, goal in rows:
        worst = max(worst, cpu / goal)
        print(f"dabench {name:<26} {cpu:7.3f} {cpu / goal:6.2f} {cpu / max(bare, 1e-3):6.1f}")
    print(f"worst ratio to goal: {worst:.2f} ({'met' if worst <= 1 else 'NOT met'})")


if __name__ == "__main__":
    main()
