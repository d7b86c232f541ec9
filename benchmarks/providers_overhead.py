"""Measure the client-side overhead of the provider adapters (not any model).

Each adapter talks to a local server that answers instantly in its wire format
(``tests/providers/servers.py``), so the figures are what dabench and the SDK add per model
call: request building, HTTP on loopback, response parsing, usage and cost. The fake
provider is measured as well (no network). Run from the repository root:

    python3 -m benchmarks.providers_overhead [--calls 300] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from tests.providers.servers import (
    Reply,
    WireServer,
    anthropic_message,
    openai_completion,
)

from dabench.providers import ChatMessage, Provider, ToolSpec, make_provider

TOOLS = [
    ToolSpec(
        name="sql_query",
        description="Run a read-only SQL query.",
        input_schema={"type": "object", "properties": {"sql": {"type": "string"}}},
    )
]
MESSAGES = [ChatMessage(role="user", content="What was net revenue in fiscal 2024?")]


async def _one(provider: Provider) -> float:
    started = time.perf_counter()
    await provider.complete(MESSAGES, system="sys", tools=TOOLS, max_tokens=64, temperature=0)
    return (time.perf_counter() - started) * 1000.0


async def measure(provider: Provider, calls: int, concurrency: int) -> tuple[list[float], float]:
    """Latencies (ms) of ``calls`` calls at most ``concurrency`` at a time, and the wall time."""
    await _one(provider)  # warm-up: connection pool, lazy SDK state
    gate = asyncio.Semaphore(concurrency)

    async def guarded() -> float:
        async with gate:
            return await _one(provider)

    started = time.perf_counter()
    latencies = await asyncio.gather(*(guarded() for _ in range(calls)))
    return list(latencies), time.perf_counter() - started


def _row(name: str, latencies: list[float], wall: float) -> str:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"{name:<16} calls {len(latencies):>5}  p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  "
        f"throughput {len(latencies) / wall:8.1f} calls/s"
    )


async def main_async(calls: int, concurrency: int) -> None:
    """Run every measurement and print one line per adapter."""
    anthropic_body = anthropic_message("ok", tool_uses=[("t1", "sql_query", {"sql": "SELECT 1"})])
    openai_body = openai_completion(tool_calls=[("c1", "sql_query", '{"sql": "SELECT 1"}')])
    print(f"calls={calls} concurrency={concurrency} (local loopback servers, instant replies)")
    with WireServer(default=lambda _r: Reply(body=anthropic_body)) as server:
        provider = make_provider("anthropic:claude-sonnet-4-6", base_url=server.url, api_key="k")
        print(_row("anthropic", *await measure(provider, calls, concurrency)))
    with WireServer(default=lambda _r: Reply(body=openai_body)) as server:
        provider = make_provider("openai:gpt-4.1", base_url=f"{server.url}/v1", api_key="k")
        print(_row("openai-compat", *await measure(provider, calls, concurrency)))
    fake = make_provider("fake:calls=1")
    print(_row("fake", *await measure(fake, calls * 10, concurrency)))
    fake_latency = make_provider("fake:calls=1,latency=50ms")
    print(_row("fake 50ms", *await measure(fake_latency, calls, concurrency * 8)))


def main() -> None:
    """Parse arguments and run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="seconds: 20 calls")
    args = parser.parse_args()
    if args.quick:
        args.calls = 20
    asyncio.run(main_async(args.calls, args.concurrency))


if __name__ == "__main__":
    main()
