"""One agent cannot stall the others: a light session's latency under hostile sessions, the
platform's memory, and how far each hostile query runs past its timeout.

Starts ``dabench platform serve`` (profile a0 with ``sql.timeout_s`` set) on loopback, on
DuckDB and on PostgreSQL (a throwaway cluster on loopback, as the tests start one). A light
session (identity ``teacher``) alternates ``describe_table`` and ``SELECT 1``: first alone
("idle"), then while N hostile sessions (identity ``learner``, in another process) loop over
every hostile class below. Prints per engine: the light session's p50/p95 idle and loaded
and their ratio (target <= 2), the same per tool at the client and in the server (the
audited duration), the cores the server and its workers used in each phase, each hostile
class's calls, error codes, slowest answer at the client and slowest run (from the audit
log: duration minus queue time, i.e. the wait for a query slot or for a replaced worker)
with its overrun past the timeout (target <= 2 s), and the peak RSS of the platform's
processes together (the server and its worker processes, sampled every 0.1 s through both
phases; PostgreSQL's own processes excluded) against the DuckDB platform's documented
bound, its RSS idle plus ``sql.memory_limit`` (target <= bound + 25 %), with their PSS
beside it (read only at a new RSS peak, at most once a second: reading PSS walks every
page table, and reading it every 0.1 s in the loaded phase only cost this process, the
light session's client, a large part of a core). The figures mean something only on a
quiet machine: the load average is printed beside them.

    python3 -m benchmarks.contention [--world DIR] [--engines duckdb,postgres] [--hostile 10]
        [--seconds 30] [--timeout-s 5] [--quick]

``--quick`` (seconds): 3 hostile sessions, a 2 s timeout, 3 s of load after a 0.5 s
warm-up, DuckDB only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import yaml

from dabench.targets.mcp_lean import LeanMcpConnection

LIGHT_KEY = "dev-teacher-key"
HOSTILE_KEY = "dev-learner-key"
ADMIN_KEY = "dev-admin-key"


def _guard_bomb(seed: int) -> str:
    """About 18 kB of flat SQL with a literal that changes every call (no guard cache hit)."""
    return " UNION ALL ".join(f"SELECT {seed + i} AS n" for i in range(700))


HOSTILE: dict[str, tuple[str, str]] = {
    "list_range": (
        "SELECT len(range(100000000))",
        "SELECT cardinality(array(SELECT generate_series(1, 100000000)))",
    ),
    "list_resize": (
        "SELECT len(list_resize([1], 100000000))",
        "SELECT cardinality(array_fill(1, ARRAY[100000000]))",
    ),
    "damerau": (
        "SELECT damerau_levenshtein(repeat('ab', 6000), repeat('ba', 6000))",
        "SELECT count(*) FROM generate_series(1, 30000) a, generate_series(1, 30000) b "
        "WHERE a + b = 7",
    ),
    "regexp_expand": (
        "SELECT length(regexp_replace(repeat('a', 100000), 'a', repeat('b', 10000), 'g'))",
        "SELECT length(regexp_replace(repeat('a', 100000), 'a', repeat('b', 10000), 'g'))",
    ),
    "lpad": (
        "SELECT length(lpad('x', 500000000, 'y'))",
        "SELECT length(lpad('x', 500000000, 'y'))",
    ),
    "repeat": ("SELECT length(repeat('x', 1000000000))", "SELECT length(repeat('x', 500000000))"),
    "slow_scan": (
        "SELECT count(*) FROM range(1000000000) a, range(1000) b WHERE a.range + b.range = 7",
        "SELECT count(*) FROM generate_series(1, 1000000000) a WHERE a % 1000000007 = 3",
    ),
    "guard_bomb": ("{guard}", "{guard}"),
}
"""Class -> (DuckDB SQL, PostgreSQL SQL): the resource attacks of issue 27."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _tree_memory(pid: int, pss: bool = True) -> tuple[float, float, int]:
    """RSS and, with ``pss``, PSS (shared pages divided among their processes) of ``pid``
    and all its descendants in MiB, and how many processes there are. RSS is cheap to read;
    PSS walks each process's page tables (about 17 ms of kernel CPU per GiB resident on the
    loaded 2-core VM), so the sampler reads it rarely."""
    rss = pss_kib = procs = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError, ValueError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1])
                    procs += 1
            if pss:
                for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                    if line.startswith("Pss:"):
                        pss_kib += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return rss / 1024.0, pss_kib / 1024.0, procs


class _MemorySampler:
    """Samples the platform's process tree every :data:`SAMPLE_S` from construction to
    :meth:`stop`, in both light phases alike (so its CPU weighs on idle and loaded alike):
    RSS every time, PSS only when RSS reaches a new peak and at most every
    :data:`PSS_EVERY_S`."""

    SAMPLE_S = 0.1
    PSS_EVERY_S = 1.0

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.loaded = False
        """Set when the hostile sessions run: only those samples count for the peak."""
        self.peak = (0.0, 0.0, 0)
        self.cpu_s = 0.0
        """CPU time the sampling thread used."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last_pss = 0.0
        while not self._stop.is_set():
            rss, pss, procs = _tree_memory(self.pid, pss=False)
            now = time.monotonic()
            if self.loaded and rss > self.peak[0]:
                if now - last_pss >= self.PSS_EVERY_S:
                    rss, pss, procs = _tree_memory(self.pid)
                    last_pss = now
                else:
                    pss = self.peak[1]
                self.peak = (rss, max(pss, self.peak[1]), max(procs, self.peak[2]))
            elif self.loaded:
                self.peak = (self.peak[0], self.peak[1], max(procs, self.peak[2]))
            self.cpu_s = time.thread_time()
            self._stop.wait(self.SAMPLE_S)

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join()


def _cpu_s(pid: int, tree: bool = False) -> float:
    """CPU seconds (user + system) the process ``pid`` has used; with ``tree``, plus its
    reaped children's and its live descendants' (the server with its workers, those
    replaced included)."""
    total = 0.0
    todo = [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
            if tree:
                total += int(fields[13]) + int(fields[14]) if p == pid else 0
                for task in Path(f"/proc/{p}/task").iterdir():
                    todo += [int(c) for c in (task / "children").read_text().split()]
    return total / os.sysconf("SC_CLK_TCK")


class _CpuMeter:
    """Cores used between construction and :meth:`done` by the server alone, the server
    with its workers, and (when given) the hostile sessions' client process."""

    def __init__(self, server: int, hostile: int | None = None) -> None:
        self.server, self.hostile, self.t0 = server, hostile, time.monotonic()
        self.start = self._read()

    def _read(self) -> tuple[float, float, float]:
        hostile = _cpu_s(self.hostile) if self.hostile else 0.0
        return _cpu_s(self.server), _cpu_s(self.server, tree=True), hostile

    def done(self) -> tuple[float, float, float]:
        """Cores (CPU seconds per second) each used."""
        end, seconds = self._read(), time.monotonic() - self.t0
        server, tree, hostile = ((b - a) / seconds for a, b in zip(self.start, end, strict=True))
        return server, tree, hostile


def _audit_events(base: str, user: str) -> list[dict[str, Any]]:
    resp = httpx.get(
        base + "/api/v1/admin/audit/events",
        params={"user_id": user, "limit": 10000},
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
        timeout=60,
    )
    resp.raise_for_status()
    return list(resp.json()["events"])


def _audit_runs(base: str) -> list[tuple[str, float]]:
    """Each hostile query's class and execution time (s): its audited duration minus its
    queue time (the wait for a slot and a worker, which the timeout does not count)."""
    out = []
    for event in _audit_events(base, "learner"):
        if event["tool_name"] != "sql_query":
            continue
        sql = str(event["parameters"].get("sql", ""))
        name = next((n for n, (d, p) in HOSTILE.items() if sql in (d, p)), "guard_bomb")
        queue_ms = event.get("queue_ms") or 0.0
        out.append((name, (event["duration_ms"] - queue_ms) / 1000.0))
    return out


def _audit_light(base: str, start: float) -> list[tuple[str, float, float, float]]:
    """The light session's calls as the server timed them, from the audit log: tool, start
    (seconds after ``start``, a Unix time), duration and queue time (the wait for a slot
    and a worker) in ms."""
    out = []
    for event in _audit_events(base, "teacher"):
        if event["tool_name"] in ("describe_table", "sql_query"):
            at = datetime.fromisoformat(event["timestamp"]).timestamp() - start
            queue = float(event.get("queue_ms") or 0.0)
            out.append((str(event["tool_name"]), at, float(event["duration_ms"]), queue))
    return out


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _open(base: str, key: str) -> tuple[LeanMcpConnection, str]:
    conn = LeanMcpConnection(base + "/mcp", {"Authorization": f"Bearer {key}"}, call_timeout_s=300)
    await conn.open()
    sid = json.loads((await conn.call("platform_info", {})).text)["session_id"]
    return conn, str(sid)


async def _hostile_loop(base: str, engine: int, n: int, stop: Any, out: Any) -> None:
    classes = list(HOSTILE)
    results: list[tuple[str, float, str]] = []
    seed = [0]

    async def one(index: int) -> None:
        conn, sid = await _open(base, HOSTILE_KEY)
        k = index
        try:
            while not stop.is_set():
                name = classes[k % len(classes)]
                k += 1
                seed[0] += 1000
                sql = HOSTILE[name][engine].replace("{guard}", _guard_bomb(seed[0]))
                t0 = time.perf_counter()
                outcome = await conn.call("sql_query", {"session_id": sid, "sql": sql})
                code = json.loads(outcome.text)["error"]["code"] if outcome.is_error else "OK"
                results.append((name, time.perf_counter() - t0, code))
        finally:
            await conn.close()

    await asyncio.gather(*(one(i) for i in range(n)))
    out.put(results)


def _hostile_process(base: str, engine: int, n: int, stop: Any, out: Any) -> None:
    """The hostile sessions in their own process (their client work stays off the light
    session's event loop)."""
    asyncio.run(_hostile_loop(base, engine, n, stop, out))


async def _light(base: str, table: str, seconds: float) -> list[tuple[str, float]]:
    conn, sid = await _open(base, LIGHT_KEY)
    calls = [
        ("describe_table", {"session_id": sid, "table": table}),
        ("sql_query", {"session_id": sid, "sql": "SELECT 1 AS one"}),
    ]
    out: list[tuple[str, float]] = []
    try:
        deadline = time.monotonic() + seconds
        i = 0
        while time.monotonic() < deadline:
            name, args = calls[i % 2]
            i += 1
            t0 = time.perf_counter()
            outcome = await conn.call(name, args)
            out.append((name, (time.perf_counter() - t0) * 1000.0))
            if outcome.is_error:
                raise RuntimeError(f"light {name} failed: {outcome.text[:300]}")
            await asyncio.sleep(0.02)
    finally:
        await conn.close()
    return out


def _serve(world: Path, tmp: Path, timeout_s: float, warehouse: str | None) -> Iterator[Any]:
    profile = yaml.safe_load(
        (Path(__file__).parents[1] / "src/dabench/platform/profiles/a0.yaml").read_text()
    )
    profile["name"] = "a0-contention"
    profile["sql"] = {"timeout_s": timeout_s}
    path = tmp / "contention.yaml"
    path.write_text(yaml.safe_dump(profile))
    port = _free_port()
    argv = [
        sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world),
        "--profile", str(path), "--port", str(port), "--state-dir", str(tmp / "state"),
    ]  # fmt: skip
    if warehouse:
        argv += ["--warehouse", warehouse]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"server did not start: {argv}")
            time.sleep(0.2)
        yield proc, base
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)


def _run_engine(
    engine: str, world: Path, table: str, opts: argparse.Namespace, warehouse: str | None
) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix=f"dabench-contention-{engine}-"))
    served = _serve(world, tmp, opts.timeout_s, warehouse)
    proc, base = next(served)
    try:
        time.sleep(1.0)  # the workers settle
        rss_idle, pss_idle, procs_idle = _tree_memory(proc.pid)
        asyncio.run(_light(base, table, opts.warmup_s))
        load_idle = _load()
        sampler = _MemorySampler(proc.pid)
        t_idle = time.time()
        meter = _CpuMeter(proc.pid)
        idle = asyncio.run(_light(base, table, opts.seconds / 2))
        cpu_idle = meter.done()
        ctx = multiprocessing.get_context("spawn")
        stop, queue = ctx.Event(), ctx.Queue()
        engine_index = 0 if engine == "duckdb" else 1
        hostile = ctx.Process(
            target=_hostile_process, args=(base, engine_index, opts.hostile, stop, queue)
        )
        sampler.loaded = True
        hostile.start()
        time.sleep(1.0)  # the hostile queries are running
        t_loaded = time.time() - t_idle
        meter = _CpuMeter(proc.pid, hostile.pid)
        loaded = asyncio.run(_light(base, table, opts.seconds))
        cpu_loaded = meter.done()
        load_loaded = _load()
        stop.set()
        results = queue.get(timeout=600)
        hostile.join(timeout=60)
        sampler.stop()
        audit = _audit_runs(base)
        server = [
            (n, at >= t_loaded, ms, q) for n, at, ms, q in _audit_light(base, t_idle) if at >= 0
        ]
    finally:
        with contextlib.suppress(StopIteration):
            next(served)
    return {
        "engine": engine,
        "idle": idle,
        "loaded": loaded,
        "load_idle": load_idle,
        "load_loaded": load_loaded,
        "hostile": results,
        "audit": audit,
        "server": server,
        "cpu_idle": cpu_idle,
        "cpu_loaded": cpu_loaded,
        "rss_idle": rss_idle,
        "pss_idle": pss_idle,
        "procs_idle": procs_idle,
        "rss_peak": sampler.peak[0],
        "pss_peak": sampler.peak[1],
        "procs_peak": sampler.peak[2],
        "sampler_cpu_s": sampler.cpu_s,
    }


def _report(res: dict[str, Any], opts: argparse.Namespace, bound_mib: float | None) -> None:
    idle = [ms for _, ms in res["idle"]]
    loaded = [ms for _, ms in res["loaded"]]
    ratio = _p(loaded, 0.95) / _p(idle, 0.95)
    print(f"\n== {res['engine']} (timeout {opts.timeout_s:g} s, {opts.hostile} hostile sessions)")
    print(
        f"light p50/p95 idle {statistics.median(idle):6.1f} / {_p(idle, 0.95):6.1f} ms "
        f"({len(idle)} calls, load {res['load_idle']})   loaded "
        f"{statistics.median(loaded):6.1f} / {_p(loaded, 0.95):6.1f} ms ({len(loaded)} calls, "
        f"load {res['load_loaded']})   p95 ratio {ratio:.2f} "
        f"({'within' if ratio <= 2 else 'OVER'} 2x)"
    )
    for tool in ("describe_table", "sql_query"):
        tool_idle = [ms for name, ms in res["idle"] if name == tool]
        tool_loaded = [ms for name, ms in res["loaded"] if name == tool]
        print(
            f"  {tool:14s} p50/p95 idle {statistics.median(tool_idle):6.1f} / "
            f"{_p(tool_idle, 0.95):6.1f} ms   loaded {statistics.median(tool_loaded):6.1f} / "
            f"{_p(tool_loaded, 0.95):6.1f} ms   p95 ratio "
            f"{_p(tool_loaded, 0.95) / _p(tool_idle, 0.95):.2f}"
        )
    for tool in ("describe_table", "sql_query"):
        s_idle = [ms for name, ld, ms, _ in res["server"] if name == tool and not ld]
        s_loaded = [ms for name, ld, ms, _ in res["server"] if name == tool and ld]
        queued = [q for name, ld, _, q in res["server"] if name == tool and ld]
        if s_idle and s_loaded:
            print(
                f"  {tool:14s} in the server (audit) p50/p95 idle {statistics.median(s_idle):5.1f}"
                f" / {_p(s_idle, 0.95):5.1f} ms   loaded {statistics.median(s_loaded):5.1f} / "
                f"{_p(s_loaded, 0.95):5.1f} ms"
                + (f" (queue max {max(queued):.1f} ms)" if tool == "sql_query" else "")
            )
    print(
        f"  cores used idle / loaded: server {res['cpu_idle'][0]:.2f} / "
        f"{res['cpu_loaded'][0]:.2f}, server and workers {res['cpu_idle'][1]:.2f} / "
        f"{res['cpu_loaded'][1]:.2f}; hostile sessions' client {res['cpu_loaded'][2]:.2f}"
    )
    by_class: dict[str, list[tuple[float, str]]] = {}
    for name, seconds, code in res["hostile"]:
        by_class.setdefault(name, []).append((seconds, code))
    executed: dict[str, list[float]] = {}
    for name, seconds in res["audit"]:
        executed.setdefault(name, []).append(seconds)
    worst = 0.0
    for name in HOSTILE:
        rows = by_class.get(name, [])
        if not rows:
            print(f"  {name:14s} no call finished")
            continue
        run = max(executed.get(name, [0.0]))
        over = run - opts.timeout_s
        worst = max(worst, over)
        codes = sorted({c for _, c in rows})
        print(
            f"  {name:14s} {len(rows):4d} calls  client max {max(s for s, _ in rows):6.2f} s  "
            f"run max {run:6.2f} s  overrun {max(over, 0.0):5.2f} s  codes {','.join(codes)}"
        )
    print(
        f"worst overrun of a run past the timeout {max(worst, 0.0):.2f} s "
        f"({'within' if worst <= 2 else 'OVER'} 2 s; run = audited duration - queue time)"
    )
    line = (
        f"platform RSS (all its processes) idle {res['rss_idle']:.0f} MiB "
        f"({res['procs_idle']} processes), peak {res['rss_peak']:.0f} MiB "
        f"(up to {res['procs_peak']} processes)"
    )
    if bound_mib is not None:
        line += f"; bound {bound_mib:.0f} MiB (RSS idle + sql.memory_limit), peak "
        line += f"{100 * (res['rss_peak'] / bound_mib - 1):+.1f} % "
        line += f"({'within' if res['rss_peak'] <= bound_mib * 1.25 else 'OVER'} +25 %)"
    print(line)
    print(
        f"  PSS (shared pages counted once) idle {res['pss_idle']:.0f} / peak "
        f"{res['pss_peak']:.0f} MiB; the sampler used {res['sampler_cpu_s']:.2f} s of CPU",
        flush=True,
    )


@contextlib.contextmanager
def _postgres(world_dir: Path) -> Iterator[str]:
    from psycopg.conninfo import conninfo_to_dict
    from tests.postgres_server import postgres_cluster  # the tests' throwaway cluster

    from dabench.world import load_world
    from dabench.world.export_sql import export_postgres
    from dabench.world.postgres_roles import create_read_only_role

    world = load_world(world_dir)
    with postgres_cluster() as admin:
        export_postgres(world, admin)
        reader = "dabench_contention_reader"
        create_read_only_role(admin, reader, [ds.id for ds in world.catalog.datasets])
        info = conninfo_to_dict(admin)
        yield f"postgresql://{reader}@{info['host']}:{info['port']}/{info['dbname']}"


def main() -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None)
    parser.add_argument("--engines", default="duckdb,postgres")
    parser.add_argument("--hostile", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--timeout-s", type=float, default=5.0)
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args()
    if opts.quick:
        opts.engines, opts.hostile, opts.seconds, opts.timeout_s = "duckdb", 3, 3.0, 2.0
    opts.warmup_s = 0.5 if opts.quick else 2.0  # the light session's, before the idle phase
    world = opts.world
    if world is None:
        from dabench.world import build_world

        world = Path(tempfile.mkdtemp(prefix="dabench-contention-")) / "w930"
        print("building world 930 (scale 1)...", flush=True)
        build_world(930, 1, world)
    from dabench.platform.profile import DEFAULT_MEMORY_LIMIT
    from dabench.platform.warehouse.duckdb_backend import _size_bytes
    from dabench.world import load_world

    table = load_world(world).catalog.datasets[0].id
    memory_mib = _size_bytes(DEFAULT_MEMORY_LIMIT) / 2**20
    print(f"cpus {os.cpu_count()}, load average {_load()}")
    for engine in opts.engines.split(","):
        if engine == "postgres":
            with _postgres(world) as dsn:
                res = _run_engine(engine, world, table, opts, dsn)
            _report(res, opts, None)
        else:
            res = _run_engine(engine, world, table, opts, None)
            _report(res, opts, res["rss_idle"] + memory_mib)


if __name__ == "__main__":
    main()
