"""Soak at realistic model latency: thousands of episodes, idle gaps past the keep-alive.

The fake provider thinks for a lognormal time (median 8 s, p99 60 s, as real models do
between two tool calls), refuses 1 % of calls with a 429 (retry-after 2 s) and fails 0.5 %
with a 503 after thinking; the reference platform (a0) closes keep-alive connections idle
5 s (uvicorn's default), and the harness's clients close theirs at 80 % of that. Each
episode makes ``--calls`` tool calls and one answer.

Time compression: every duration of the model, the retry waits, the platform's keep-alive
and the clients' idle limit is divided by the level's factor ``F``, so the ratio of every
idle gap to the keep-alive is the one of the uncompressed run (about 70 % of the gaps
between two model calls are longer than 5 s) while 2,000 episodes at concurrency 1 finish in
minutes. The episodes are repetitions of the built-in S1-S3 tasks (a multi-turn task makes
``--calls`` tool calls per turn). ``F`` is chosen per level so that the model alone would
take ``--level-wall-s`` (or fixed with ``--compression``). What is not compressed is the
harness's and the platform's own work, so efficiency at a large ``F`` is a pessimistic estimate of
efficiency at real latency.

Printed per level: harness errors (must be 0), other non-completed episodes, retries (the
episodes' transient retries) and the 429s / 503s injected, ideal and measured wall time,
efficiency = ideal / measured, where ideal = (model time + the waits the 429s asked for) /
concurrency (a lower bound, so efficiency is conservative), harness CPU per episode, and
what the connection pools did (connections opened, reused, dropped idle, dropped because the
platform had closed them, requests resent on a new connection).

    python -m benchmarks.soak [--episodes 2000] [--concurrency 1 8 32 64] [--median-s 8]
        [--p99-s 60] [--keep-alive-s 5] [--client-idle-s S] [--level-wall-s 150]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dabench.providers.fake import FakeProvider, FakeSettings
from runner_throughput import default_world, experiment, run_level

Z99 = 2.3263478740408408
TASKS = {"suites": ["s1", "s2", "s3"]}
"""123 built-in tasks (8 of them multi-turn): 2,000 episodes need k = 17 (k is at most 100)."""
QUICK_TASKS = {"suites": ["s1", "s3"], "smoke": True}
"""``--quick``: the 10 S1/S3 smoke tasks."""


def mean_latency(median: float, p99: float) -> float:
    """Mean of the lognormal with this median and p99."""
    sigma = math.log(p99 / median) / Z99
    return median * math.exp(sigma * sigma / 2)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.4f}ms"


async def soak_level(args: argparse.Namespace, world: Path, concurrency: int) -> dict[str, Any]:
    """Run one concurrency level and return its figures."""
    model_s = args.episodes * (args.calls + 1) * mean_latency(args.median_s, args.p99_s)
    factor = args.compression or max(1.0, model_s / concurrency / args.level_wall_s)
    model = (
        f"fake:soak,calls={args.calls},search=off,median={_ms(args.median_s / factor)},"
        f"p99={_ms(args.p99_s / factor)},rate_429={args.rate_429},rate_5xx={args.rate_5xx},"
        f"retry_after={_ms(args.retry_after_s / factor)},seed={args.seed + concurrency}"
    )
    target: dict[str, Any] = {"keep_alive_s": args.keep_alive_s / factor}
    if args.client_idle_s is not None:
        target["client_idle_s"] = args.client_idle_s / factor
    agent = {"retries": {"max_attempts": 8, "base_delay": 1.0 / factor, "max_delay": 30.0 / factor}}
    tasks = QUICK_TASKS if args.quick else TASKS
    exp = experiment(world, concurrency, model, target=target, agent=agent, tasks=tasks)
    level = await run_level(exp, args.episodes)
    provider = getattr(level.run.arms[0].agent, "_provider", None)  # the arm's one provider
    assert isinstance(provider, FakeProvider), provider
    summary, n = level.summary, len(level.episodes)
    statuses = dict(summary.statuses)
    errors = statuses.pop("harness_error", 0)
    statuses.pop("completed", None)
    keep_alive = args.keep_alive_s / factor
    gaps = provider.latencies
    ideal = (sum(gaps) + provider.retry_after_s) / concurrency
    stats = level.target.pool_stats
    return {
        "concurrency": concurrency,
        "factor": factor,
        "episodes": n,
        "harness_errors": errors,
        "error_samples": summary.harness_errors[:3],
        "other": statuses,
        "retries": sum(e.transient_retries for e in level.episodes),
        "injected": f"{provider.refused_429} / {provider.failed_5xx}",
        "gaps_past_keep_alive": sum(g > keep_alive for g in gaps) / max(1, len(gaps)),
        "ideal_s": ideal,
        "wall_s": summary.episodes_wall_s,
        "efficiency": ideal / summary.episodes_wall_s,
        "cpu_ms_per_episode": 1000 * summary.episodes_cpu_s / max(1, n),
        "platform_cpu_ms_per_episode": 1000 * level.platform_cpu_s / max(1, n),
        "pools": (
            f"{stats.opened}/{stats.reused}/{stats.expired}/{stats.peer_closed}/{stats.resent}"
        ),
    }


def main() -> None:
    """Run every level and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None, help="a built world (default: cache)")
    parser.add_argument("--episodes", type=int, default=2000, help="episodes per level")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    parser.add_argument("--calls", type=int, default=2, help="tool calls per episode")
    parser.add_argument("--median-s", type=float, default=8.0, help="model latency median")
    parser.add_argument("--p99-s", type=float, default=60.0, help="model latency p99")
    parser.add_argument("--rate-429", type=float, default=0.01)
    parser.add_argument("--rate-5xx", type=float, default=0.005)
    parser.add_argument("--retry-after-s", type=float, default=2.0, help="a 429's retry-after")
    parser.add_argument("--keep-alive-s", type=float, default=5.0, help="the platform's")
    parser.add_argument(
        "--client-idle-s",
        type=float,
        default=None,
        help="the clients' idle limit (default 80 %% of the keep-alive; set it above the "
        "keep-alive to soak the detection of connections the platform closed)",
    )
    parser.add_argument(
        "--level-wall-s", type=float, default=150.0, help="model-bound wall time per level"
    )
    parser.add_argument("--compression", type=float, default=None, help="fixed factor F")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="seconds: the 10 S1/S3 smoke tasks at c = 4, about 2 s of model",
    )
    args = parser.parse_args()
    if args.quick:
        args.episodes, args.concurrency, args.level_wall_s = 8, [4], 2.0
    FakeSettings(median=args.median_s, p99=args.p99_s)  # validate before the long run
    world = args.world or default_world()
    console = Console(width=240)
    table = Table(
        "c",
        "F",
        "episodes",
        "harness errors",
        "not completed",
        "retries",
        "429/503",
        "gaps > keep-alive",
        "ideal s",
        "wall s",
        "efficiency",
        "harness CPU ms/episode",
        "platform CPU ms/episode",
        "connections opened/reused/expired/peer-closed/resent",
    )
    rows = []
    for concurrency in args.concurrency:
        r = asyncio.run(soak_level(args, world, concurrency))
        rows.append(r)
        console.print(f"c={concurrency} done: {r['harness_errors']} harness errors", style="dim")
        for sample in r["error_samples"]:
            console.print(f"  {sample}", style="red")
        table.add_row(
            str(concurrency),
            f"{r['factor']:.0f}",
            str(r["episodes"]),
            str(r["harness_errors"]),
            ", ".join(f"{k} {v}" for k, v in r["other"].items()) or "0",
            str(r["retries"]),
            r["injected"],
            f"{r['gaps_past_keep_alive']:.0%}",
            f"{r['ideal_s']:.1f}",
            f"{r['wall_s']:.1f}",
            f"{r['efficiency']:.3f}",
            f"{r['cpu_ms_per_episode']:.2f}",
            f"{r['platform_cpu_ms_per_episode']:.2f}",
            r["pools"],
        )
    console.print(
        f"fake model: lognormal median {args.median_s:g} s, p99 {args.p99_s:g} s, "
        f"{args.rate_429:.1%} 429 (retry-after {args.retry_after_s:g} s), "
        f"{args.rate_5xx:.1%} 503; {args.calls} tool calls + 1 answer per episode; platform a0 "
        f"keep-alive {args.keep_alive_s:g} s; every duration divided by F"
    )
    console.print(table)
    total = sum(r["harness_errors"] for r in rows)
    console.print(f"harness errors in total: {total}")
    console.print(f"load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if total:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
