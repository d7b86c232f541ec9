"""Runner throughput: how close the harness gets to the ideal wall time of a model-bound run.

A local fake provider answers every model call after a fixed latency (200 ms by default) and
the reference platform (profile a0) serves the tools. Each episode makes ``calls`` tool calls
and one final answer, so it needs ``calls + 1`` model calls. With concurrency ``c`` and ``n``
episodes the ideal wall time is ``ceil(n / c) * (calls + 1) * latency`` (tool time counted as
overhead); efficiency = ideal / measured wall time of the episode phase (targets already up).
Also prints the harness process's CPU time per tool call.

    python benchmarks/runner_throughput.py [--world DIR] [--latency-ms 200] [--calls 2]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from dabench.journal.store import Journal
from dabench.runner.experiment import Experiment
from dabench.runner.run import ExperimentRun, load_task_set, resolve_world
from dabench.targets.reference import ReferenceTarget

LEVELS = ((1, 8), (8, 64), (32, 128))
"""(concurrency, episodes) pairs: enough episodes for several waves at each level."""


def experiment(
    world: Path, concurrency: int, episodes: int, latency_ms: int, calls: int
) -> Experiment:
    """One reference-platform arm with the fake provider, k chosen to give ``episodes``."""
    return Experiment.model_validate(
        {
            "name": f"throughput-c{concurrency}",
            "world": {"dir": str(world)},
            "tasks": {"smoke": True},
            "k": 1,
            "concurrency": concurrency,
            "episode_timeout_s": 120,
            "arms": [
                {
                    "name": "a0",
                    "target": {"kind": "reference", "profile": "a0"},
                    "agent": {
                        "kind": "llm",
                        "model": f"fake:latency={latency_ms}ms,calls={calls},search=off",
                        "provider_settings": {},
                    },
                }
            ],
        }
    )


async def measure(
    world: Path, concurrency: int, episodes: int, latency_ms: int, calls: int
) -> dict[str, float]:
    """Run one level and return its figures."""
    exp = experiment(world, concurrency, episodes, latency_ms, calls)
    n_tasks = len(load_task_set(exp, Path.cwd()).tasks)
    k = max(1, math.ceil(episodes / n_tasks))
    exp = exp.model_copy(update={"k": k})
    n = k * n_tasks
    with tempfile.TemporaryDirectory(prefix="dabench-throughput-") as tmp:
        run = ExperimentRun(
            exp,
            Path(tmp) / "run",
            experiment_dir=Path.cwd(),
            console=Console(quiet=True),
            progress=False,
        )
        summary = await run.execute()
        latencies = [c.latency_ms for e in Journal(Path(tmp) / "run").load() for c in e.tool_calls]
    assert summary.statuses.get("completed", 0) == n, summary.statuses
    target = run.arms[0].target
    assert isinstance(target, ReferenceTarget)
    platform_cpu = (target.cpu_at_stop or 0.0) - (target.cpu_at_ready or 0.0)
    ideal = math.ceil(n / concurrency) * (calls + 1) * latency_ms / 1000
    return {
        "episodes": n,
        "ideal_s": ideal,
        "wall_s": summary.episodes_wall_s,
        "efficiency": ideal / summary.episodes_wall_s,
        "cpu_ms_per_call": 1000 * summary.episodes_cpu_s / max(1, summary.tool_calls),
        "tool_calls": summary.tool_calls,
        "platform_cpu_ms_per_call": 1000 * platform_cpu / max(1, summary.tool_calls),
        "tool_latency_ms": statistics.mean(latencies),
        "cpu_load": (summary.episodes_cpu_s + platform_cpu) / summary.episodes_wall_s,
    }


def main() -> None:
    """Measure at concurrency 1, 8 and 32 and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None, help="a built world (default: cache)")
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2, help="tool calls per episode")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per level; the run with the median efficiency is shown",
    )
    args = parser.parse_args()
    base = Experiment.model_validate(
        {
            "name": "w",
            "arms": [{"name": "x", "target": {"kind": "reference"}, "agent": {"kind": "oracle"}}],
        }
    )
    world = args.world or resolve_world(base, Path.cwd())
    table = Table(
        "concurrency",
        "episodes",
        "tool calls",
        "ideal s",
        "measured s",
        "efficiency",
        "harness CPU ms / tool call",
        "platform CPU ms / tool call",
        "tool-call latency ms",
        "CPU busy (cores)",
    )
    for concurrency, episodes in LEVELS:
        runs = [
            asyncio.run(measure(world, concurrency, episodes, args.latency_ms, args.calls))
            for _ in range(args.repeat)
        ]
        runs.sort(key=lambda run: run["efficiency"])
        r = runs[len(runs) // 2]
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
            f"{r['cpu_ms_per_call']:.2f}",
            f"{r['platform_cpu_ms_per_call']:.2f}",
            f"{r['tool_latency_ms']:.1f}",
            f"{r['cpu_load']:.2f} / {os.cpu_count()}",
        )
    console = Console(width=140)
    console.print(
        f"fake provider latency {args.latency_ms} ms, {args.calls} tool calls + 1 answer "
        "per episode, reference platform a0"
    )
    console.print(table)
    load = os.getloadavg()[0]
    console.print(f"load average at the end: {load:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
