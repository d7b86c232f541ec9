"""Runner throughput: how close the harness gets to the ideal wall time of a model-bound run.

A local fake provider answers every model call after a fixed latency (200 ms by default) and
the reference platform (profile a0) serves the tools. Each episode makes ``calls`` tool calls
and one final answer, so it needs ``calls + 1`` model calls. With concurrency ``c`` and ``n``
episodes the ideal wall time is ``ceil(n / c) * (calls + 1) * latency`` (tool time counted as
overhead); efficiency = ideal / measured wall time of the episode phase (targets already up).
Also prints the harness process's CPU time per tool call and per episode, the platform's CPU
(its SQL worker processes included) and its peak memory (PSS of the platform process and its
workers together, sampled every 0.1 s by a process of its own).

    python benchmarks/runner_throughput.py [--world DIR] [--latency-ms 200] [--calls 2]
        [--concurrency 1 8 32 64] [--episodes 320] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from dabench.journal.records import Episode
from dabench.journal.store import Journal
from dabench.runner.experiment import Experiment
from dabench.runner.run import ExperimentRun, RunSummary, load_task_set, resolve_world
from dabench.targets.process import children, tree_pss_bytes
from dabench.targets.reference import ReferenceTarget

LEVELS = ((1, 8), (8, 64), (32, 128))
"""Default (concurrency, episodes) pairs: enough episodes for several waves at each level."""


def experiment(
    world: Path,
    concurrency: int,
    model: str,
    *,
    target: dict[str, Any] | None = None,
    agent: dict[str, Any] | None = None,
    episode_timeout_s: float = 120,
    tasks: dict[str, Any] | None = None,
) -> Experiment:
    """One reference-platform (a0) arm with the fake provider ``model`` over ``tasks`` (default:
    the smoke tasks); ``target`` and ``agent`` add settings to the arm's target and agent."""
    return Experiment.model_validate(
        {
            "name": f"throughput-c{concurrency}",
            "world": {"dir": str(world)},
            "tasks": tasks or {"smoke": True},
            "k": 1,
            "concurrency": concurrency,
            "episode_timeout_s": episode_timeout_s,
            "arms": [
                {
                    "name": "a0",
                    "target": {"kind": "reference", "profile": "a0", **(target or {})},
                    "agent": {"kind": "llm", "model": model, **(agent or {})},
                }
            ],
        }
    )


@dataclass
class LevelRun:
    """One executed level: the run (its arm's target and agent), summary and episodes."""

    run: ExperimentRun
    summary: RunSummary
    episodes: list[Episode]

    @property
    def target(self) -> ReferenceTarget:
        """The arm's reference target (stopped)."""
        target = self.run.arms[0].target
        assert isinstance(target, ReferenceTarget)
        return target

    @property
    def platform_cpu_s(self) -> float:
        """Platform CPU seconds between healthy and stop."""
        return (self.target.cpu_at_stop or 0.0) - (self.target.cpu_at_ready or 0.0)


async def run_level(exp: Experiment, episodes: int) -> LevelRun:
    """Run ``exp`` with k chosen to give at least ``episodes`` episodes."""
    n_tasks = len(load_task_set(exp, Path.cwd()).tasks)
    exp = exp.model_copy(update={"k": max(1, math.ceil(episodes / n_tasks))})
    with tempfile.TemporaryDirectory(prefix="dabench-throughput-") as tmp:
        run = ExperimentRun(
            exp,
            Path(tmp) / "run",
            experiment_dir=Path.cwd(),
            console=Console(quiet=True),
            progress=False,
        )
        summary = await run.execute()
        loaded = Journal(Path(tmp) / "run").load()
    return LevelRun(run, summary, loaded)


class PlatformMemory:
    """Samples, every 0.1 s, the memory of each ``platform serve`` process below this one with
    its worker processes (PSS: pages they share counted once); keeps the peak.

    The sampling runs in a process of its own (this script with ``--sample-memory PID``):
    reading ``/proc`` every 0.1 s is about 6 ms of CPU a sample, which in a thread of this
    process would count as harness CPU (2.5 ms per tool call at c = 8, measured 2026-12-03)
    and hold the GIL the episodes need."""

    def __init__(self) -> None:
        self.peak_bytes = 0
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> PlatformMemory:
        self._proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--sample-memory", str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None
        out, _ = self._proc.communicate(input="", timeout=60)  # stdin closed: print the peak
        if self._proc.returncode != 0 or not out.strip():
            raise RuntimeError(f"the memory sampler failed (exit {self._proc.returncode})")
        self.peak_bytes = int(out.split()[-1])


def sample_memory(pid: int) -> None:
    """The sampler process: every 0.1 s until its stdin closes, the peak PSS of the ``platform
    serve`` processes below ``pid`` (each with its workers); prints the peak in bytes."""
    closed = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), closed.set()), daemon=True).start()
    peak = 0
    while not closed.wait(0.1):
        for platform in _platforms(pid):
            peak = max(peak, tree_pss_bytes(platform))
    print(peak, flush=True)


def _platforms(pid: int) -> list[int]:
    """``platform serve`` processes among the descendants of ``pid``."""
    found: list[int] = []
    for child in children(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        found += [child] if b"platform\x00serve" in cmdline else _platforms(child)
    return found


async def measure(
    world: Path, concurrency: int, episodes: int, latency_ms: int, calls: int
) -> dict[str, float]:
    """Run one level and return its figures."""
    model = f"fake:latency={latency_ms}ms,calls={calls},search=off"
    with PlatformMemory() as memory:
        level = await run_level(experiment(world, concurrency, model), episodes)
    summary = level.summary
    n = len(level.episodes)
    assert summary.statuses.get("completed", 0) == n, summary.statuses
    latencies = [c.latency_ms for e in level.episodes for c in e.tool_calls]
    platform_cpu = level.platform_cpu_s
    ideal = math.ceil(n / concurrency) * (calls + 1) * latency_ms / 1000
    return {
        "episodes": n,
        "ideal_s": ideal,
        "wall_s": summary.episodes_wall_s,
        "efficiency": ideal / summary.episodes_wall_s,
        "cpu_ms_per_call": 1000 * summary.episodes_cpu_s / max(1, summary.tool_calls),
        "cpu_ms_per_episode": 1000 * summary.episodes_cpu_s / max(1, n),
        "tool_calls": summary.tool_calls,
        "platform_cpu_ms_per_call": 1000 * platform_cpu / max(1, summary.tool_calls),
        "tool_latency_ms": statistics.mean(latencies),
        "cpu_load": (summary.episodes_cpu_s + platform_cpu) / summary.episodes_wall_s,
        "platform_peak_pss_mb": memory.peak_bytes / 2**20,
    }


def default_world() -> Path:
    """The cached default world (built on first use)."""
    base = Experiment.model_validate(
        {
            "name": "w",
            "arms": [{"name": "x", "target": {"kind": "reference"}, "agent": {"kind": "oracle"}}],
        }
    )
    return resolve_world(base, Path.cwd())


def main() -> None:
    """Measure each level and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None, help="a built world (default: cache)")
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2, help="tool calls per episode")
    parser.add_argument(
        "--concurrency", type=int, nargs="+", default=None, help="levels (default: 1 8 32)"
    )
    parser.add_argument(
        "--episodes",
        type=int,
        default=None,
        help="episodes per level, rounded up to whole repetitions of the smoke tasks "
        "(default: 8, 64, 128 for 1, 8, 32; 4 x concurrency otherwise)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per level; the run with the median efficiency is shown",
    )
    parser.add_argument(
        "--quick", action="store_true", help="seconds: 8 episodes at c = 4, 20 ms per call"
    )
    parser.add_argument("--sample-memory", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sample_memory is not None:
        sample_memory(args.sample_memory)
        return
    if args.quick:
        args.concurrency, args.episodes, args.latency_ms = [4], 8, 20
    world = args.world or default_world()
    defaults = dict(LEVELS)
    levels = [
        (c, args.episodes or defaults.get(c, 4 * c))
        for c in (args.concurrency or [c for c, _ in LEVELS])
    ]
    table = Table(
        "concurrency",
        "episodes",
        "tool calls",
        "ideal s",
        "measured s",
        "efficiency",
        "harness CPU ms / episode",
        "harness CPU ms / tool call",
        "platform CPU ms / tool call",
        "tool-call latency ms",
        "CPU busy (cores)",
    )
    peaks: list[tuple[int, float]] = []
    for concurrency, episodes in levels:
        runs = [
            asyncio.run(measure(world, concurrency, episodes, args.latency_ms, args.calls))
            for _ in range(args.repeat)
        ]
        runs.sort(key=lambda run: run["efficiency"])
        r = runs[len(runs) // 2]
        peaks.append((concurrency, max(run["platform_peak_pss_mb"] for run in runs)))
        spread = (
            f" ({runs[0]['efficiency']:.3f}-{runs[-1]['efficiency']:.3f})" if len(runs) > 1 else ""
        )
        table.add_row(
            str(concurrency),
            str(int(r["episodes"])),
            str(int(r["tool_calls"])),
            f"{r['ideal_s']:.2f}",
            f"{r['wall_s']:.2f}",
            f"{r['efficiency']:.3f}{spread}",
            f"{r['cpu_ms_per_episode']:.2f}",
            f"{r['cpu_ms_per_call']:.2f}",
            f"{r['platform_cpu_ms_per_call']:.2f}",
            f"{r['tool_latency_ms']:.1f}",
            f"{r['cpu_load']:.2f} / {os.cpu_count()}",
        )
    console = Console(width=160)
    console.print(
        f"fake provider latency {args.latency_ms} ms, {args.calls} tool calls + 1 answer "
        "per episode, reference platform a0"
    )
    console.print(table)
    for concurrency, r in peaks:
        console.print(
            f"platform peak memory at c = {concurrency} (PSS, with its SQL worker processes): "
            f"{r:.0f} MiB"
        )
    load = os.getloadavg()[0]
    console.print(f"load average at the end: {load:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
