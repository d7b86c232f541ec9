"""Measure the client side of the Elastic adapters (not Elasticsearch or Kibana themselves).

1. ``dabench world export``: a built world into a local server implementing the index and
   bulk contract (``tests/elastic/fake_elasticsearch.py``), run in another process so the
   figures are what dabench and the official client cost: documents per second and client
   CPU time.
2. The ``kibana`` target: converse rounds against a local Agent Builder server
   (``tests/elastic/fake_kibana.py``, another process) answering instantly with one ES|QL tool
   step of ``--rows`` tabular rows, synchronous and streamed (SSE): wall ms and client CPU ms
   per round.

Run from the repository root::

    python3 -m benchmarks.elastic_overhead [--world DIR] [--rounds 200] [--rows 200]

``--quick`` exports only the world's :data:`QUICK_DATASETS` smallest datasets (and the
knowledge index) and times 10 rounds of 20 rows after one warm-up round.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.elastic.fake_elasticsearch import FakeElasticsearch
from tests.elastic.fake_kibana import FakeKibana, Scripted, tabular, tool_step

from dabench.targets.base import TargetContext
from dabench.targets.kibana import KibanaTarget
from dabench.targets.registry import make_target
from dabench.world import build_world, load_world
from dabench.world.export_elasticsearch import connect_elasticsearch, export_world

ROWS = 200
QUICK_DATASETS = 8
"""How many datasets (the smallest) ``--quick`` exports."""


def _answer(body: dict[str, Any]) -> Scripted:
    values = [[i, f"store-{i}", i * 1.5] for i in range(ROWS)]
    result = tabular("FROM dabench-sales.stores | LIMIT 1000", ["id", "name", "x"], values)
    step = tool_step("platform.core.execute_esql", {"query": "FROM dabench-sales.stores"}, [result])
    message = "There are many stores; here is the full list and the answer.\nFINAL ANSWER: 42"
    return Scripted(message=message, steps=[step])


def _serve(kind: str, rows: int, queue: Any) -> None:
    global ROWS
    ROWS = rows
    server: FakeElasticsearch | FakeKibana
    server = FakeElasticsearch() if kind == "es" else FakeKibana(_answer)
    with server:
        queue.put(server.url)
        time.sleep(3600)


def _start(kind: str, rows: int = ROWS) -> tuple[mp.Process, str]:
    queue: Any = mp.Queue()
    proc = mp.Process(target=_serve, args=(kind, rows, queue), daemon=True)
    proc.start()
    return proc, str(queue.get(timeout=30))


def bench_export(world_dir: Path, datasets: int | None = None) -> None:
    """Export the world twice (the second run finds every index there); with ``datasets``,
    only that many of its smallest datasets."""
    world = load_world(world_dir)
    chosen = None
    if datasets is not None:
        by_size = sorted(world.catalog.datasets, key=lambda d: (d.row_count, d.id))
        chosen = [d.id for d in by_size[:datasets]]
    proc, url = _start("es")
    try:
        client = connect_elasticsearch(url, None)
        for label in ("first export", "re-run (same world)"):
            cpu0, t0 = time.process_time(), time.perf_counter()
            summary = export_world(world, client, chunk_size=1000, datasets=chosen)
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            print(
                f"export {label}: {summary.docs:,} documents into {len(summary.indices)} indices "
                f"in {wall:.2f}s wall = {summary.docs / wall:,.0f} docs/s; client CPU "
                f"{cpu:.2f}s = {cpu / summary.docs * 1e6:.1f} us/doc"
            )
        client.close()
    finally:
        proc.terminate()


async def _rounds(target: KibanaTarget, n: int, stream: bool) -> list[float]:
    times = []
    for _ in range(n):
        session = await target.open_session()
        t0 = time.perf_counter()
        await session.converse("How many stores?", connector_id="c", stream=stream)
        times.append((time.perf_counter() - t0) * 1000)
    return times


async def bench_kibana(rounds: int, rows: int, warmup: int = 5) -> None:
    """Converse ``rounds`` times synchronously, then streamed, after ``warmup`` rounds."""
    proc, url = _start("kibana", rows)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            raw = {"kind": "kibana", "url": url, "api_key": "test-key"}
            target = make_target(raw, TargetContext(world_dir=None, work_dir=Path(tmp)))
            assert isinstance(target, KibanaTarget)
            await target.start()
            try:
                await _rounds(target, warmup, True)
                for stream in (False, True):
                    cpu0 = time.process_time()
                    times = await _rounds(target, rounds, stream)
                    cpu = (time.process_time() - cpu0) / rounds * 1000
                    route = "/converse/async (SSE)" if stream else "/converse (sync)"
                    print(
                        f"kibana {route}: {rounds} rounds, 1 tool step x {rows} rows: wall "
                        f"median {statistics.median(times):.2f} ms, p90 "
                        f"{sorted(times)[int(0.9 * len(times))]:.2f} ms; client CPU "
                        f"{cpu:.2f} ms/round"
                    )
            finally:
                await target.stop()
    finally:
        proc.terminate()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--world", type=Path, help="a built world (default: build 930/1)")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"seconds: the {QUICK_DATASETS} smallest datasets, 10 rounds of 20 rows",
    )
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.rows = 10, 20
    with tempfile.TemporaryDirectory() as tmp:
        world_dir = args.world
        if world_dir is None:
            world_dir = Path(tmp) / "w930"
            build_world(930, 1, world_dir)
        bench_export(world_dir, QUICK_DATASETS if args.quick else None)
    asyncio.run(bench_kibana(args.rounds, args.rows, 1 if args.quick else 5))


if __name__ == "__main__":
    main()
