"""Memory lookup cost as other users' memories pile up (issue 13, item 6).

Every memory-aware tool call looks up the memories the caller may see: their own pending
and approved insights and everyone's approved ones. This script runs ``PlatformService.call``
in-process on profile a3 (memory on) for one user who owns a few memories, while other users'
pending memories (invisible to that user) grow from 0 to 10,000, and prints the p50 of each
memory-aware call at every size and its ratio to the p50 at 0; then the same through real
``dabench platform serve`` processes over HTTP (raw MCP 2026-07-28 POSTs on one keep-alive
connection, the memories written into each server's state database). Each size has its own
service or server, and the calls of all sizes are timed interleaved, in rounds, so load from
other jobs on a shared machine falls on every size alike. The target is a ratio within
1.5x at 10,000. Run from the repo root:

    python3 -m benchmarks.memory_lookup [--world DIR] [--calls 200] [--sizes 0,1000,10000]

Without ``--world`` it builds world 930 at scale 1 into a temporary directory.
"""

from __future__ import annotations

import argparse
import gc
import json
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from dabench.platform.admin.auth import DEV_AUTH
from dabench.platform.profile import load_profile
from dabench.platform.service import PlatformService
from dabench.platform.state import Insight, StateStore, new_id
from dabench.platform.storage import Database
from dabench.platform.world_content import load_world_content

OWN = 5
"""Memories the measured user owns."""
OTHERS = 100
"""How many other users the piled-up memories are spread over."""


def _p50s(
    calls: dict[Any, Callable[[], object]], n: int, warmup: int, rounds: int = 10
) -> dict[Any, float]:
    """p50 ms of each call over ``n`` calls after ``warmup`` untimed ones, taken in
    interleaved rounds so that a burst of load on a shared machine hits every call (and every
    size) alike."""
    times: dict[Any, list[float]] = {key: [] for key in calls}
    for fn in calls.values():
        for _ in range(warmup):
            fn()
    for _ in range(rounds):
        for key, fn in calls.items():
            for _ in range(max(1, n // rounds)):
                t0 = time.perf_counter()
                fn()
                times[key].append((time.perf_counter() - t0) * 1000.0)
    return {key: statistics.median(t) for key, t in times.items()}


def _pile(state: StateStore, start: int, stop: int, related: str) -> None:
    now = datetime.now(UTC)
    for n in range(start, stop):
        state.add_insight(
            Insight(
                id=new_id("ins"),
                type="fact",
                content=f"memory {n} of another user about {related} and quarter {n % 97}",
                related_ids=[related],
                confidence=0.8,
                status="pending",
                captured_by=f"user{n % OTHERS}",
                created_at=now,
                updated_at=now,
            )
        )


NOTES = [  # distinct enough that none supersedes another
    "alpha ledger totals exclude the March backfill",
    "bravo refunds arrive two days late",
    "charlie regions were renamed in spring",
    "delta currency conversion uses month-end rates",
    "echo test accounts carry the prefix qa_",
]
Call = Callable[[str, dict[str, Any]], dict[str, Any]]


def _calls(call: Call, dataset: str) -> dict[str, Callable[[], object]]:
    """Open nothing new: capture the user's own memories, return the memory-aware calls."""
    own = [
        call("memory_capture", {"content": text, "related_ids": [dataset]})["insight"]["id"]
        for text in NOTES[:OWN]
    ]
    call("search", {"query": "warm up the gate"})
    return {
        "memory_manage list": lambda: call("memory_manage", {"action": "list"}),
        "describe_table (memories in enrichment)": lambda: call(
            "describe_table", {"table": dataset}
        ),
        "fetch memory:<own>": lambda: call("fetch", {"id": f"memory:{own[0]}"}),
        "search kinds=[memory]": lambda: call("search", {"query": "refunds", "kinds": ["memory"]}),
    }


def _measure(
    setups: dict[int, dict[str, Callable[[], object]]], n: int, warmup: int
) -> dict[str, dict[int, float]]:
    """Every size's calls measured together, interleaved."""
    flat = {(size, name): fn for size, calls in setups.items() for name, fn in calls.items()}
    results: dict[str, dict[int, float]] = {}
    for (size, name), p50 in _p50s(flat, n, warmup).items():
        results.setdefault(name, {})[size] = p50
    return results


def _table(title: str, results: dict[str, dict[int, float]], sizes: list[int]) -> None:
    print()
    print(title)
    print("| call | " + " | ".join(f"p50 ms @ {s}" for s in sizes) + f" | ratio {sizes[-1]}/0 |")
    print("| --- " * (len(sizes) + 2) + "|")
    for name, by_size in results.items():
        ratio = by_size[sizes[-1]] / by_size[sizes[0]]
        cells = " | ".join(f"{by_size[s]:.2f}" for s in sizes)
        print(f"| {name} | {cells} | {ratio:.2f} |")
    print()


def _in_process(world: Path, tmp: Path, sizes: list[int], n: int, warmup: int) -> None:
    """One in-process service per size, each with its own state database."""
    content = load_world_content(world)
    identity = DEV_AUTH.identities[0]
    dataset = content.catalog.datasets[0].id
    services: list[PlatformService] = []
    setups: dict[int, dict[str, Callable[[], object]]] = {}
    for size in sizes:
        service = PlatformService(content, load_profile("a3"), DEV_AUTH, tmp / f"inproc-{size}")
        services.append(service)
        sid = json.loads(service.call(identity, "platform_info", {}).text)["session_id"]

        def call(
            tool: str, args: dict[str, Any], service: PlatformService = service, sid: str = sid
        ) -> dict[str, Any]:
            outcome = service.call(identity, tool, {"session_id": sid, **args})
            assert not outcome.is_error, outcome.text
            return dict(outcome.payload)

        setups[size] = _calls(call, dataset)
        t0 = time.perf_counter()
        _pile(service.state, 0, size, dataset)
        print(f"  in-process: {size} other users' memories ({time.perf_counter() - t0:.1f} s)")
    gc.collect()
    results = _measure(setups, n, warmup)
    for service in services:
        service.close()
    _table("in-process, PlatformService.call", results, sizes)


def _server(world: Path, state_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    argv = [
        sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world),
        "--profile", "a3", "--port", str(port), "--state-dir", str(state_dir),
    ]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


def _http_call(client: httpx.Client, base: str, session: dict[str, str]) -> Call:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }

    def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        params = {"name": tool, "arguments": {**session, **args}, "_meta": meta}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        headers = {
            "Authorization": f"Bearer {DEV_AUTH.identities[0].key}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": tool,
        }
        result = client.post(base + "/mcp", json=body, headers=headers).json()["result"]
        assert not result.get("isError"), result
        return dict(json.loads(result["content"][0]["text"]))

    return call


def _over_http(world: Path, tmp: Path, sizes: list[int], n: int, warmup: int) -> None:
    """One ``dabench platform serve`` process per size; memories go into its state database."""
    servers = {size: _server(world, tmp / f"http-{size}") for size in sizes}
    client = httpx.Client(timeout=60)
    dataset = load_world_content(world).catalog.datasets[0].id
    try:
        setups: dict[int, dict[str, Callable[[], object]]] = {}
        for size, (proc, base) in servers.items():
            deadline = time.monotonic() + 180
            while True:
                try:
                    if client.get(base + "/healthz").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("platform did not start")
                time.sleep(0.1)
            session: dict[str, str] = {}
            call = _http_call(client, base, session)
            session["session_id"] = call("platform_info", {})["session_id"]
            setups[size] = _calls(call, dataset)
            state = StateStore(Database(sqlite_path=tmp / f"http-{size}" / "state.sqlite"))
            t0 = time.perf_counter()
            _pile(state, 0, size, dataset)
            state.db.close()
            print(f"  over HTTP: {size} other users' memories ({time.perf_counter() - t0:.1f} s)")
        gc.collect()
        results = _measure(setups, n, warmup)
        _table("real server over HTTP (one keep-alive connection)", results, sizes)
    finally:
        client.close()
        for proc, _ in servers.values():
            proc.send_signal(signal.SIGINT)
        for proc, _ in servers.values():
            proc.wait(timeout=30)


def main() -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--sizes", default="0,1000,10000")
    parser.add_argument(
        "--quick", action="store_true", help="seconds: 10 calls after 2, sizes 0,100"
    )
    opts = parser.parse_args()
    if opts.quick:
        opts.calls, opts.sizes = 10, "0,100"
    sizes = sorted(int(s) for s in opts.sizes.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="dabench-bench-"))
    world = opts.world
    if world is None:
        from dabench.world import build_world

        world = tmp / "w930"
        print("building world 930 (scale 1)...", flush=True)
        build_world(930, 1, world)
    warmup = 2 if opts.quick else 10  # untimed calls of each kind and size first
    _in_process(world, tmp, sizes, opts.calls, warmup)
    _over_http(world, tmp, sizes, opts.calls, warmup)


if __name__ == "__main__":
    main()
