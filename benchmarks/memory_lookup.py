"""Memory lookup cost as other users' memories pile up (issue 13, item 6).

Every memory-aware tool call looks up the memories the caller may see: their own pending
and approved insights and everyone's approved ones. This script runs ``PlatformService.call``
in-process on profile a3 (memory on) for one user who owns a few memories, while other users'
pending memories (invisible to that user) grow from 0 to 10,000, and prints the p50 of each
memory-aware call at every size and its ratio to the p50 at 0. The target is a ratio within
1.5x at 10,000. Run from the repo root:

    python3 -m benchmarks.memory_lookup [--world DIR] [--calls 200] [--sizes 0,1000,10000]

Without ``--world`` it builds world 930 at scale 1 into a temporary directory.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dabench.platform.auth import DEV_AUTH
from dabench.platform.profile import load_profile
from dabench.platform.service import PlatformService
from dabench.platform.state import Insight, new_id
from dabench.platform.world_content import load_world_content

OWN = 5
"""Memories the measured user owns."""
OTHERS = 100
"""How many other users the piled-up memories are spread over."""


def _p50s(calls: dict[str, Any], n: int, rounds: int = 5) -> dict[str, float]:
    """p50 ms of each call over ``n`` calls, taken in interleaved rounds so that a burst of
    load on a shared machine hits every call alike."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for fn in calls.values():
        for _ in range(10):
            fn()
    for _ in range(rounds):
        for name, fn in calls.items():
            for _ in range(max(1, n // rounds)):
                t0 = time.perf_counter()
                fn()
                times[name].append((time.perf_counter() - t0) * 1000.0)
    return {name: statistics.median(t) for name, t in times.items()}


def _pile(service: PlatformService, start: int, stop: int, related: str) -> None:
    now = datetime.now(UTC)
    for n in range(start, stop):
        service.state.add_insight(
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


def main() -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--sizes", default="0,1000,10000")
    opts = parser.parse_args()
    sizes = sorted(int(s) for s in opts.sizes.split(","))
    tmp = Path(tempfile.mkdtemp(prefix="dabench-bench-"))
    world = opts.world
    if world is None:
        from dabench.world import build_world

        world = tmp / "w930"
        print("building world 930 (scale 1)...", flush=True)
        build_world(930, 1, world)
    content = load_world_content(world)
    service = PlatformService(content, load_profile("a3"), DEV_AUTH, tmp / "state")
    identity = DEV_AUTH.identities[0]
    dataset = content.catalog.datasets[0].id

    def call(tool: str, **args: Any) -> dict[str, Any]:
        outcome = service.call(identity, tool, {"session_id": sid, **args})
        assert not outcome.is_error, outcome.text
        return outcome.payload

    sid = json.loads(service.call(identity, "platform_info", {}).text)["session_id"]
    notes = [  # distinct enough that none supersedes another
        "alpha ledger totals exclude the March backfill",
        "bravo refunds arrive two days late",
        "charlie regions were renamed in spring",
        "delta currency conversion uses month-end rates",
        "echo test accounts carry the prefix qa_",
    ]
    own = [
        call("memory_capture", content=text, related_ids=[dataset])["insight"]["id"]
        for text in notes[:OWN]
    ]
    calls: dict[str, Any] = {
        "memory_manage list": lambda: call("memory_manage", action="list"),
        "describe_table (memories in enrichment)": lambda: call("describe_table", table=dataset),
        "fetch memory:<own>": lambda: call("fetch", id=f"memory:{own[0]}"),
        "search kinds=[memory]": lambda: call("search", query="refunds", kinds=["memory"]),
    }
    call("search", query="warm up the gate")
    results: dict[str, dict[int, float]] = {name: {} for name in calls}
    have = 0
    for size in sizes:
        t0 = time.perf_counter()
        _pile(service, have, size, dataset)
        have = size
        print(f"{size} other users' memories (inserted in {time.perf_counter() - t0:.1f} s)")
        gc.collect()
        for name, p50 in _p50s(calls, opts.calls).items():
            results[name][size] = p50
    service.close()
    print()
    print("| call | " + " | ".join(f"p50 ms @ {s}" for s in sizes) + f" | ratio {sizes[-1]}/0 |")
    print("| --- " * (len(sizes) + 2) + "|")
    for name, by_size in results.items():
        ratio = by_size[sizes[-1]] / by_size[sizes[0]]
        cells = " | ".join(f"{by_size[s]:.2f}" for s in sizes)
        print(f"| {name} | {cells} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
