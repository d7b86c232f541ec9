"""World build and PostgreSQL load against scale: time, peak memory and their ratios.

For each scale (default 100 and 1000), in one run: ``build_world(seed, S)`` (what
``dabench world build`` runs) in a child process, then ``export_postgres`` (``dabench world
export --postgres``) of that world, in another child, into a throwaway PostgreSQL 15 started
under /tmp (loopback, trust auth, fsync off). Times are measured inside the child around the
call (interpreter start-up and imports excluded); CPU seconds are the child's own (every
thread; on a shared machine the steadier figure). Peak RSS is the child's high-water mark as
the kernel reports it (``ru_maxrss`` from ``wait4``; DuckDB runs in-process, so its threads and
buffers are included; the PostgreSQL server's own memory is not). The PostgreSQL server's
CPU seconds during each load (postmaster, its processes and exited backends) are printed
beside the loader's. For each pair of
consecutive scales a < b it prints the ratios

* build time(b) / ((b / a) x build time(a))   (linear: 1.0; target <= 1.2)
* PostgreSQL load time, likewise
* peak RSS(b) / peak RSS(a)                   (flat: about 1.0)

    python benchmarks/world_scale.py [--scales 100,1000] [--seed 0] [--no-postgres]

"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.postgres_server


CHILD = """
import json, sys, time
from pathlib import Path
from dabench.world import build_world, load_world
from dabench.world.export_sql import export_postgres
step, out, arg = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
wall, cpu = time.perf_counter(), time.process_time()
if step == "build":
    seed, scale = map(int, arg.split(":"))
    build_world(seed, scale, out)
else:
    export_postgres(load_world(out), arg)
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
"""
"""The child process: one build or one load, timed around the call."""


@dataclass(frozen=True)
class Measured:
    """One step in a child process: wall seconds, CPU seconds and peak RSS in MiB."""

    wall_s: float
    cpu_s: float
    peak_mib: float


def run_child(step: str, out: Path, arg: str) -> Measured:
    """Run one build (``arg`` = ``seed:scale``) or load (``arg`` = DSN) and measure it."""
    argv = [sys.executable, "-c", CHILD, step, str(out), arg]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    printed = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{step} {out} failed with exit code {proc.returncode}")
    wall, cpu = json.loads(printed.strip().splitlines()[-1])
    return Measured(wall, cpu, usage.ru_maxrss / 1024)


def _proc_stat(pid: str) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (index 1: parent pid, 11-14:
    user, system, waited-children user and system ticks)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def server_cpu_s(dsn: str) -> float:
    """CPU seconds the PostgreSQL server at ``dsn`` has used so far: the postmaster, its
    live processes and every backend that has exited (the postmaster's waited children),
    read from Linux ``/proc``."""
    port = dsn.rsplit(":", 1)[1].split("/", 1)[0]
    stats: dict[str, list[str]] = {}
    postmaster = None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError):
            stats[entry.name] = _proc_stat(entry.name)
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            is_postgres = Path(cmd[0].decode()).name == "postgres" and b"-p" in cmd
            if is_postgres and cmd[cmd.index(b"-p") + 1].decode() == port:
                postmaster = entry.name
    if postmaster is None:
        raise SystemExit(f"no PostgreSQL server on port {port}")
    ticks = os.sysconf("SC_CLK_TCK")
    main = stats[postmaster]
    total = sum(int(main[i]) for i in (11, 12, 13, 14))
    total += sum(int(s[11]) + int(s[12]) for s in stats.values() if s[1] == postmaster)
    return total / ticks


@contextmanager
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL 15 cluster under /tmp (the one the tests start)."""
    from tests.postgres_server import postgres_cluster

    with postgres_cluster() as dsn:
        yield dsn


def _ratio(b: float, a: float, factor: float) -> str:
    return f"{b / (factor * a):.2f}"


def main() -> None:
    """Measure every scale, print one table of figures and one of ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default="100,1000")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument(
        "--quick", action="store_true", help="seconds: scales 1,2 (PostgreSQL load included)"
    )
    args = parser.parse_args()
    if args.quick:
        args.scales = "1,2"
    scales = [int(s) for s in args.scales.split(",")]
    console = Console(width=160)
    console.print(
        f"{os.cpu_count()} cores, load average before: {os.getloadavg()[0]:.2f}", highlight=False
    )
    builds: dict[int, Measured] = {}
    loads: dict[int, Measured] = {}
    server: dict[int, float] = {}
    lines: dict[int, int] = {}
    rows: dict[int, int] = {}
    workdir = Path(tempfile.mkdtemp(prefix="dabench-world-scale-"))
    try:
        with nullcontext("") if args.no_postgres else postgres() as dsn:
            for scale in scales:
                out = workdir / f"w{scale}"
                builds[scale] = run_child("build", out, f"{args.seed}:{scale}")
                table_rows = json.loads((out / "world.json").read_text())["table_rows"]
                lines[scale] = table_rows["sales.order_lines"]
                rows[scale] = sum(table_rows.values())
                console.print(f"scale {scale}: built {builds[scale]}", highlight=False)
                if dsn:
                    before = server_cpu_s(dsn)
                    loads[scale] = run_child("load", out, dsn)
                    server[scale] = server_cpu_s(dsn) - before
                    console.print(f"scale {scale}: loaded {loads[scale]}", highlight=False)
                shutil.rmtree(out)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    figures = Table(title=f"world build and PostgreSQL load per scale (seed {args.seed})")
    for col in ("scale", "order lines", "rows", "build wall s / CPU s", "build peak RSS MiB"):
        figures.add_column(col, justify="right")
    if loads:
        figures.add_column("load wall s / CPU s", justify="right")
        figures.add_column("server CPU s", justify="right")
        figures.add_column("load peak RSS MiB", justify="right")
    for scale in scales:
        b = builds[scale]
        cells = [
            str(scale),
            f"{lines[scale]:,}",
            f"{rows[scale]:,}",
            f"{b.wall_s:.1f} / {b.cpu_s:.1f}",
            f"{b.peak_mib:.0f}",
        ]
        if loads:
            cells += [f"{loads[scale].wall_s:.1f} / {loads[scale].cpu_s:.1f}"]
            cells += [f"{server[scale]:.1f}"]
            cells += [f"{loads[scale].peak_mib:.0f}"]
        figures.add_row(*cells)
    console.print(figures)
    ratios = Table(title="ratios: time(b) / ((b/a) x time(a)) (target <= 1.2), RSS(b) / RSS(a)")
    for col in ("a -> b", "rows(b) / ((b/a) rows(a))", "build wall", "build CPU", "build RSS"):
        ratios.add_column(col, justify="right")
    if loads:
        for col in ("load wall", "load CPU", "server CPU", "load RSS"):
            ratios.add_column(col, justify="right")
    for a, b in itertools.pairwise(scales):
        k = b / a
        cells = [
            f"{a} -> {b}",
            _ratio(rows[b], rows[a], k),
            _ratio(builds[b].wall_s, builds[a].wall_s, k),
            _ratio(builds[b].cpu_s, builds[a].cpu_s, k),
            _ratio(builds[b].peak_mib, builds[a].peak_mib, 1),
        ]
        if loads:
            cells += [
                _ratio(loads[b].wall_s, loads[a].wall_s, k),
                _ratio(loads[b].cpu_s, loads[a].cpu_s, k),
                _ratio(server[b], server[a], k),
                _ratio(loads[b].peak_mib, loads[a].peak_mib, 1),
            ]
        ratios.add_row(*cells)
    console.print(ratios)
    console.print(f"load average after: {os.getloadavg()[0]:.2f}", highlight=False)


if __name__ == "__main__":
    main()
