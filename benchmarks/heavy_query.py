"""A light session's latency while another session runs a 1 GB-result query; server RSS.

Starts ``dabench platform serve`` (profile a0, or a0 with a changed ``sql`` section) as a
real process on loopback. Session L sends a light ``sql_query`` (a COUNT over a warehouse
table) back to back: first alone ("idle"), then while session H, from another process,
repeatedly sends ``SELECT repeat('x', 100000) FROM range(10000)`` (a 1 GB result; the
server streams it and stops at the row/byte cap); timing starts once H's first call
returned. Prints per variant: light-session p50/p95 idle and under load, their ratio
(target: p95 within 2x of idle), how many heavy calls finished and their latency, and the
server's RSS (start, peak = ``VmHWM``, at the end of the load and ``SETTLE_S`` later).
The figures are only meaningful on an otherwise idle machine (check ``uptime``). Variants:

- ``default``: the shipped defaults (1 MiB byte cap, memory_limit 2GiB);
- ``cap256MiB``: ``max_result_bytes`` at its maximum (256 MiB), to show what the cap buys.

Run from the repo root::

    python3 -m benchmarks.heavy_query [--world DIR] [--calls 300] [--variants default,cap256MiB]

Without ``--world`` it builds world 930 at scale 1 into a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
import yaml
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

HEAVY_SQL = "SELECT repeat('x', 100000) AS s FROM range(10000)"
"""10 000 rows of 100 kB: a 1 GB result."""
SETTLE_S = 3.0
"""Idle time before the last RSS reading (DuckDB's allocator hands memory back meanwhile)."""
KEY = "dev-teacher-key"
HEAVY_KEY = "dev-learner-key"
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "cap256MiB": {"max_result_bytes": 256 * 1024 * 1024},
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_mib(pid: int, field: str) -> float:
    """``VmRSS`` or ``VmHWM`` (peak) of a process in MiB (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def _p(latencies: list[float], q: float) -> float:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _client(base: str, key: str) -> tuple[httpx2.AsyncClient, Client]:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(120.0)
    )
    return http, Client(streamable_http_client(base + "/mcp", http_client=http))


async def _session(client: Client) -> str:
    info = await client.call_tool("platform_info", {})
    return str(json.loads(info.content[0].text)["session_id"])  # type: ignore[union-attr]


async def _heavy_loop(base: str, ready: Any, stop: Any, out: Any) -> None:
    http, heavy = _client(base, HEAVY_KEY)
    latencies: list[float] = []
    errors = 0
    async with http, heavy:
        args = {"session_id": await _session(heavy), "sql": HEAVY_SQL}
        while not stop.is_set():
            t0 = time.perf_counter()
            result = await heavy.call_tool("sql_query", args)
            latencies.append((time.perf_counter() - t0) * 1000.0)
            errors += bool(result.is_error)
            ready.set()
    out.put((latencies, errors))


def _heavy_process(base: str, ready: Any, stop: Any, out: Any) -> None:
    """Session H in its own process, so parsing its big answers does not delay session L's
    client (the two would otherwise share one event loop and one GIL)."""
    asyncio.run(_heavy_loop(base, ready, stop, out))


async def _measure(base: str, light_sql: str, calls: int, warmup: int) -> dict[str, Any]:
    http_l, light = _client(base, KEY)
    async with http_l, light:
        args = {"session_id": await _session(light), "sql": light_sql}

        async def timed(n: int) -> list[float]:
            out = []
            for _ in range(n):
                t0 = time.perf_counter()
                result = await light.call_tool("sql_query", args)
                out.append((time.perf_counter() - t0) * 1000.0)
                assert not result.is_error, result.content
            return out

        await timed(warmup)
        idle = await timed(calls)
        ctx = multiprocessing.get_context("spawn")
        ready, stop, queue = ctx.Event(), ctx.Event(), ctx.Queue()
        proc = ctx.Process(target=_heavy_process, args=(base, ready, stop, queue))
        proc.start()
        while not ready.is_set():  # timing starts after the first heavy call returned
            await asyncio.sleep(0.05)
        loaded = await timed(calls)
        stop.set()
        heavy, errors = queue.get(timeout=600)
        proc.join(timeout=60)
    return {"idle": idle, "loaded": loaded, "heavy": heavy, "heavy_errors": errors}


def _run_variant(
    world: Path,
    tmp: Path,
    name: str,
    light_sql: str,
    calls: int,
    warmup: int = 20,
    settle_s: float = SETTLE_S,
) -> None:
    profile = yaml.safe_load(
        (Path(__file__).parents[1] / "src/dabench/platform/profiles/a0.yaml").read_text()
    )
    profile["name"] = f"a0-{name}"
    profile["sql"] = VARIANTS[name]
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(profile))
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [
        sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world),
        "--profile", str(path), "--port", str(port), "--state-dir", str(tmp / name),
    ]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"server did not start: {argv}")
            time.sleep(0.1)
        rss_start = _rss_mib(proc.pid, "VmRSS")
        res = asyncio.run(_measure(base, light_sql, calls, warmup))
        rss_peak = _rss_mib(proc.pid, "VmHWM")
        rss_end = _rss_mib(proc.pid, "VmRSS")
        time.sleep(settle_s)
        rss_after = _rss_mib(proc.pid, "VmRSS")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    idle, loaded, heavy = res["idle"], res["loaded"], res["heavy"]
    ratio = _p(loaded, 0.95) / _p(idle, 0.95)
    print(
        f"{name:10s} light p50/p95 idle {statistics.median(idle):7.1f} / {_p(idle, 0.95):7.1f} ms"
        f"   loaded {statistics.median(loaded):7.1f} / {_p(loaded, 0.95):7.1f} ms"
        f"   p95 ratio {ratio:5.2f} ({'within' if ratio <= 2 else 'OVER'} 2x)"
    )
    print(
        f"{'':10s} heavy calls {len(heavy)} (p50 {statistics.median(heavy):.0f} ms, "
        f"errors {res['heavy_errors']})   server RSS start {rss_start:.0f} MiB, "
        f"peak {rss_peak:.0f} MiB, end of load {rss_end:.0f} MiB, {settle_s:g} s later "
        f"{rss_after:.0f} MiB",
        flush=True,
    )


def main() -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--variants", default="default,cap256MiB")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="seconds: 10 calls after 2 warm-up, 0.5 s settle, default only",
    )
    opts = parser.parse_args()
    if opts.quick:
        opts.calls, opts.variants = 10, "default"
    tmp = Path(tempfile.mkdtemp(prefix="dabench-heavy-"))
    world = opts.world
    if world is None:
        from dabench.world import build_world

        world = tmp / "w930"
        print("building world 930 (scale 1)...", flush=True)
        build_world(930, 1, world)
    from dabench.world import load_world

    table = load_world(world).catalog.datasets[0].id
    light_sql = f"SELECT count(*) FROM {table}"
    print(f"light: {light_sql!r}, {opts.calls} calls per phase; heavy: {HEAVY_SQL!r}")
    for name in opts.variants.split(","):
        if opts.quick:
            _run_variant(world, tmp, name, light_sql, opts.calls, warmup=2, settle_s=0.5)
        else:
            _run_variant(world, tmp, name, light_sql, opts.calls)


if __name__ == "__main__":
    main()
