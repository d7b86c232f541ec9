"""CPU a reference platform costs to start: ``dabench platform serve`` over HTTP, from exec
until ``/healthz`` answers, per profile.

CI starts well over a hundred platforms (experiment runs, fixtures, benchmark quick modes), so
their start-up is a large share of the suite's CPU (docs/benchmarks.md, "CI time"). The
figure is the CPU of the server and its SQL worker together (Linux ``/proc``, the process tree)
when it first answers; the best of ``--repeat`` starts is printed with the wall time of that
start. CPU, not wall time, is the figure: a busy machine stretches the clock far more than
the CPU. CI pins the property behind it without timing: tests/platform/test_platform_imports.py
checks which heavy modules a platform's main process loads.

    python -m benchmarks.platform_start [--world DIR] [--profiles a0,a2] [--repeat 5] [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from dabench.targets.process import free_port, tree_cpu_seconds

READY_TIMEOUT_S = 300.0
"""A safety net for a server that never answers (never a figure)."""


def start_once(world: Path, profile: str) -> tuple[float, float]:
    """Start one platform, wait for ``/healthz``, stop it: (CPU seconds, wall seconds)."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="dabench-start-") as state:
        argv = [
            sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world),
            "--profile", profile, "--port", str(port), "--state-dir", state,
        ]  # fmt: skip
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = time.monotonic()
        try:
            while True:
                if proc.poll() is not None:
                    raise SystemExit(f"platform serve exited with {proc.returncode}")
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                        break
                except OSError:
                    if time.monotonic() - started > READY_TIMEOUT_S:
                        raise SystemExit("platform serve did not answer /healthz") from None
                    time.sleep(0.02)
            wall = time.monotonic() - started
            cpu = tree_cpu_seconds(proc.pid) or 0.0
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return cpu, wall


def main() -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None)
    parser.add_argument("--profiles", default="a0,a2")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="seconds: a0, one start")
    opts = parser.parse_args()
    if opts.quick:
        opts.profiles, opts.repeat = "a0", 1
    world = opts.world
    if world is None:
        from dabench.world.cache import default_world

        world = default_world()
    print(f"{'profile':<8} {'CPU s (best)':>12} {'wall s':>8}   runs")
    for profile in opts.profiles.split(","):
        runs = [start_once(world, profile) for _ in range(opts.repeat)]
        cpu, wall = min(runs)
        print(f"{profile:<8} {cpu:>12.2f} {wall:>8.2f}   {len(runs)}")
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
