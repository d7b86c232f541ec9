"""Query latency of the warehouse backends: DuckDB (the world's file) vs PostgreSQL.

Exports the world into PostgreSQL (a throwaway cluster on loopback unless ``--dsn`` names an
administrator DSN), creates the SELECT-only role, then runs every gold SQL of the smoke suite
(the PostgreSQL dialect on PostgreSQL, as the oracle sends it) ``--reps`` times
on each backend (in alternating blocks) at two layers:

- ``backend``: :meth:`Warehouse.run` alone (the engine, the bounded fetch);
- ``sql_query``: the platform's ``sql_query`` call in process (profile a0: guard, backend,
  audit row), what an agent's call costs without the transport.

Prints p50 and p90 per layer and the PostgreSQL / DuckDB ratio of the p50s. Run from the
repo root::

    python3 -m benchmarks.pg_warehouse_latency [--world DIR] [--dsn postgresql://...] [--reps 30]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from psycopg.conninfo import make_conninfo

from dabench.platform.admin.auth import DEV_AUTH
from dabench.platform.profile import load_profile
from dabench.platform.service import PlatformService
from dabench.platform.world_content import load_world_content
from dabench.tasks.engines import truth_sql_for
from dabench.tasks.loader import load_builtin_tasks
from dabench.tasks.lock import gradings
from dabench.tasks.selection import TaskSelection, select_tasks
from dabench.world import load_world
from dabench.world.export_sql import export_postgres
from dabench.world.postgres_roles import create_read_only_role

READER = "dabench_bench_reader"


@contextlib.contextmanager
def _cluster(dsn: str | None) -> Iterator[str]:
    if dsn is not None:
        yield dsn
        return
    from tests.postgres_server import postgres_cluster  # the tests' throwaway cluster

    with postgres_cluster() as started:
        yield started


def _smoke_sql() -> list[tuple[str, str, str]]:
    """(key, DuckDB SQL, PostgreSQL SQL) of every smoke gold SQL."""
    smoke = select_tasks(load_builtin_tasks(), TaskSelection.model_validate({"smoke": True}))
    out = []
    for item in smoke.items:
        for key, g in gradings(item):
            duck, pg = truth_sql_for(g, "duckdb"), truth_sql_for(g, "postgres")
            if duck and pg:
                out.append((key, duck, pg))
    return out


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1e3


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    """Measure and print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", type=Path, help="a built world (default: world 930 scale 1)")
    ap.add_argument("--dsn", help="administrator DSN of a PostgreSQL to load (default: start one)")
    ap.add_argument("--reps", type=int, default=30, help="runs of each query per backend")
    ap.add_argument("--quick", action="store_true", help="seconds: 1 run of each query")
    opts = ap.parse_args()
    if opts.quick:
        opts.reps = 1
    if opts.world is None:
        from dabench.validation.tasks import default_world

        opts.world = default_world()
    world = load_world(opts.world)
    content = load_world_content(opts.world)
    queries = _smoke_sql()
    with _cluster(opts.dsn) as admin, tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        export_postgres(world, admin)
        load_s = time.perf_counter() - t0
        create_read_only_role(admin, READER, [ds.id for ds in world.catalog.datasets])
        reader = make_conninfo(admin, user=READER)
        profile = load_profile("a0")
        services = {
            "duckdb": PlatformService(content, profile, DEV_AUTH, Path(tmp) / "duck"),
            "postgres": PlatformService(
                content, profile, DEV_AUTH, Path(tmp) / "pg", warehouse_dsn=reader
            ),
        }
        identity = DEV_AUTH.identities[0]
        sids = {
            name: json.loads(s.call(identity, "platform_info", {}).text)["session_id"]
            for name, s in services.items()
        }
        times: dict[tuple[str, str], list[float]] = {}
        timeout_s = profile.sql.timeout_s  # as sql_query passes it (one statement_timeout)
        # Each engine's calls run back to back (blocks alternate per repetition): a server
        # process woken after idling answers slower, and interleaving single calls would
        # charge that to whichever engine ran second.
        for _ in range(opts.reps):
            for engine, svc in services.items():
                sqls = [pg if engine == "postgres" else duck for _key, duck, pg in queries]
                for sql in sqls:
                    start = time.perf_counter()
                    svc.warehouse.run(sql, 1000, timeout_s)
                    times.setdefault(("backend", engine), []).append(_ms(start))
                for sql in sqls:
                    args = {"session_id": sids[engine], "sql": sql, "limit": 1000}
                    start = time.perf_counter()
                    out = svc.call(identity, "sql_query", args)
                    times.setdefault(("sql_query", engine), []).append(_ms(start))
                    assert not out.is_error, out.text
        for svc in services.values():
            svc.close()
    rows = sum(ds.row_count for ds in world.catalog.datasets)
    print(f"world {world.world_hash[:12]} ({rows:,} rows) loaded into PostgreSQL in {load_s:.1f} s")
    print(f"{len(queries)} smoke gold queries x {opts.reps} runs per backend and layer")
    print(f"{'layer':<10} {'engine':<9} {'p50 ms':>8} {'p90 ms':>8} {'mean ms':>8}")
    for layer in ("backend", "sql_query"):
        for engine in ("duckdb", "postgres"):
            v = times[(layer, engine)]
            print(
                f"{layer:<10} {engine:<9} {statistics.median(v):8.2f} {_pct(v, 0.9):8.2f} "
                f"{statistics.fmean(v):8.2f}"
            )
        ratio = statistics.median(times[(layer, "postgres")]) / statistics.median(
            times[(layer, "duckdb")]
        )
        print(f"{layer:<10} p50 ratio postgres/duckdb = {ratio:.2f}")


if __name__ == "__main__":
    main()
