"""Per-episode start cost of a stdio MCP server, with and without the warm pool.

Each episode is what the runner does with an ``mcp`` target that starts one server process
per episode: open a session (without a pool: spawn the process and do the MCP handshake;
with ``warm_pool``: take a process started ahead), call one tool, then "think" for
``--think`` seconds (a model's turn) and end the episode (its process stops). The figure
that matters is the **wait**: from the episode's start until its session answered its first
tool call. Episodes run ``--concurrency`` at a time; the pool is ``--pool`` deep (default:
the concurrency).

Servers:
- ``reference`` (default): ``dabench platform serve --transport stdio`` on world 930 (it
  loads the world at start: seconds), the session handle minted by ``platform_info``;
- any other stdio server after ``--``, with ``--tool NAME`` and ``--arguments JSON`` for the
  call, e.g. mcp-server-duckdb from the test cache:

    python benchmarks/warm_pool.py [--episodes 12] [--concurrency 2] [--think 2]
    python benchmarks/warm_pool.py --tool query --arguments '{"query": "SELECT 1"}' -- \\
        ~/.cache/dabench-tests/mcp-server-duckdb-1.1.0/bin/mcp-server-duckdb \\
        --db-path W.duckdb --readonly
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dabench.targets.base import TargetContext
from dabench.targets.mcp import McpTarget
from dabench.targets.registry import make_target
from dabench.world import ensure_world
from dabench.world.cache import world_cache_dir


def reference_config(work: Path) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """The reference platform over stdio: target config, tool and its arguments."""
    world = ensure_world(930, 1, world_cache_dir())
    command = [
        sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world),
        "--profile", "a0", "--transport", "stdio", "--state-dir", str(work / "state"),
    ]  # fmt: skip
    config = {
        "command": command,
        "session_tool": {"name": "platform_info"},
        "session_argument": "session_id",
    }
    return config, "sql_query", {"sql": "SELECT 1", "limit": 1}


async def episode(target: McpTarget, tool: str, arguments: dict[str, Any], think: float) -> float:
    """One episode; returns its wait (seconds until the first tool call answered)."""
    t0 = time.perf_counter()
    session = await target.open_session()
    outcome = await session.call(tool, arguments)
    wait = time.perf_counter() - t0
    if outcome.is_error:
        raise SystemExit(f"{tool} failed: {outcome.text[:300]}")
    await asyncio.sleep(think)
    await target.end_episode([session.handle])
    return wait


async def measure(
    config: dict[str, Any], pool: int, args: argparse.Namespace, work: Path
) -> tuple[list[float], float]:
    """(per-episode waits, wall seconds of the episode phase) for one pool depth."""
    ctx = TargetContext(work_dir=work / f"pool{pool}", world_dir=work, experiment_dir=work)
    target = make_target({"kind": "mcp", "name": "bench", **config, "warm_pool": pool}, ctx)
    assert isinstance(target, McpTarget)
    await target.start()  # lists tools (and, with a pool, starts its processes)
    if pool:
        await asyncio.sleep(args.settle)  # the pool warms up as it would while a run starts
    gate = asyncio.Semaphore(args.concurrency)
    waits: list[float] = []

    async def one() -> None:
        async with gate:
            waits.append(await episode(target, args.tool, args.call_arguments, args.think))

    t0 = time.perf_counter()
    try:
        await asyncio.gather(*(one() for _ in range(args.episodes)))
    finally:
        wall = time.perf_counter() - t0
        await target.stop()
    return waits, wall


def main() -> None:
    """Parse arguments, measure without and with the pool, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=12)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--pool", type=int, default=None, help="default: the concurrency")
    parser.add_argument("--think", type=float, default=2.0, help="seconds per episode's turn")
    parser.add_argument("--settle", type=float, default=5.0, help="pool warm-up before timing")
    parser.add_argument("--tool", default=None)
    parser.add_argument("--arguments", default="{}")
    parser.add_argument("command", nargs="*", help="a stdio server (default: the reference)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="1 episode on 1 slot (a pool of 1), short think and settle (checks it runs)",
    )
    args = parser.parse_args()
    if args.quick:  # each episode without a pool starts a server: the cost is the starts
        args.episodes, args.concurrency, args.think, args.settle = 1, 1, 0.2, 0.5
    pool = args.pool or args.concurrency
    with tempfile.TemporaryDirectory(prefix="dabench-warm-pool-") as tmp:
        work = Path(tmp)
        if args.command:
            if not args.tool:
                raise SystemExit("--tool NAME is needed with a server command")
            config: dict[str, Any] = {"command": args.command}
            args.call_arguments = json.loads(args.arguments)
            label = " ".join(Path(args.command[0]).name.split())
        else:
            config, args.tool, args.call_arguments = reference_config(work)
            label = "reference platform (stdio, profile a0)"
        print(
            f"{label}: {args.episodes} episodes, concurrency {args.concurrency}, "
            f"think {args.think:g} s; load average before {os.getloadavg()[0]:.2f}"
        )
        print(f"{'mode':16} {'wait median':>11} {'p95':>7} {'max':>7} {'wall s':>7} {'ep/s':>6}")
        for depth in (0, pool):
            waits, wall = asyncio.run(measure(config, depth, args, work))
            waits.sort()
            p95 = waits[min(len(waits) - 1, int(0.95 * len(waits)))]
            mode = f"warm_pool {depth}" if depth else "no pool"
            print(
                f"{mode:16} {statistics.median(waits):10.3f}s {p95:6.3f}s {waits[-1]:6.3f}s "
                f"{wall:7.2f} {len(waits) / wall:6.2f}"
            )
        print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
