"""Run the key benchmarks, write every figure with the load average to one JSON, and compare
against an earlier commit.

Key benchmarks (each measurement in its own child process, so two commits never share one):

- ``runner_throughput`` at c = 8, 32, 64 (fake model at ``--latency-ms``, ``--episodes``
  per level, 2 tool calls + 1 answer): efficiency, harness CPU per tool call, platform CPU per
  tool call (``benchmarks/runner_throughput.py``'s ``measure``);
- ``report_scale`` at ``--report-episodes`` (10,000): journal reading, statistics, report.md
  and report.html in a fresh process: wall and CPU seconds, peak RSS
  (``benchmarks/report_scale.py``, the run generated once per commit and cached);
- ``platform_roundtrip``: the MCP overhead of each client over the in-process DuckDB query
  at p50 (``python -m benchmarks.platform_roundtrip``, its printed figures parsed).

With ``--baseline-commit REV`` the same measurements run against REV: its tree is exported
(``git archive``, read-only) under ``$DABENCH_CACHE/run_all/<sha>`` (or ``--baseline-dir``
names a checkout), and each child runs with that tree's ``src`` and ``benchmarks`` first on
the path. Measurements are interleaved (baseline, current, current, baseline, ... per
repetition) so load from other jobs falls on both alike; the table shows medians and the
ratio current / baseline. Every single measurement is in the JSON with the 1/5/15-minute
load averages taken just before and after it.

    python -m benchmarks.run_all [--out FILE] [--repeat 3] [--only runner,report,roundtrip]
        [--baseline-commit REV | --baseline-dir DIR] [--quick]

``--quick`` (seconds): c = 4 with 8 episodes at 20 ms, a 200-episode report, 10 round trips;
one repetition.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
KEYS = ("runner", "report", "roundtrip")
OVER_DIRECT = re.compile(r"^\s+(.+?)\s+\+(-?\d+\.\d+) ms over direct", re.M)
THROUGHPUT = re.compile(r"-> (\d+) calls/s")


def _cache_root() -> Path:
    return Path(os.environ.get("DABENCH_CACHE") or Path.home() / ".cache" / "dabench")


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _env(root: Path) -> dict[str, str]:
    """The environment of a child measuring the tree at ``root``: its ``src`` first, so the
    platform processes it spawns run that tree's code too."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}


# --- children: run inside the measured tree's code ---------------------------------------


def _count_platform_tree() -> None:
    """Make the measured tree's platform CPU figure cover the platform's whole process tree
    (its SQL worker processes too) with this tree's :func:`tree_cpu_seconds`: older trees
    count the platform process alone, which ran every query in-process before 2d03504."""
    spec = importlib.util.spec_from_file_location(
        "_run_all_process", HERE.parent / "src" / "dabench" / "targets" / "process.py"
    )
    assert spec is not None and spec.loader is not None
    mine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mine)
    from dabench.targets.process import ServerProcess

    def cpu_seconds(self: Any) -> float | None:
        return None if self.proc is None else mine.tree_cpu_seconds(self.proc.pid)

    ServerProcess.cpu_seconds = cpu_seconds  # type: ignore[method-assign]


def _child(key: str, point: str, opts: argparse.Namespace) -> dict[str, float]:
    """One measurement with the tree at ``opts.root`` (its src and benchmarks on the path)."""
    root = Path(opts.root)
    sys.path[:0] = [str(root / "src"), str(root / "benchmarks"), str(root)]
    os.chdir(root)
    if key == "runner":
        import asyncio

        from dabench.world import ensure_world
        from runner_throughput import measure  # the measured tree's own script

        _count_platform_tree()
        world = opts.world or ensure_world(930, 1, _cache_root() / "worlds")
        figures = asyncio.run(
            measure(Path(world), int(point), opts.episodes, opts.latency_ms, opts.calls)
        )
        keep = (
            "efficiency", "wall_s", "cpu_ms_per_call", "platform_cpu_ms_per_call",
            "platform_peak_pss_mb",
        )  # fmt: skip
        out = {k: float(figures[k]) for k in keep if k in figures}
        if "platform_cpu_ms_per_call" in out and figures.get("episodes"):
            per_episode = out["platform_cpu_ms_per_call"] * figures["tool_calls"]
            out["platform_cpu_ms_per_episode"] = per_episode / figures["episodes"]
        return out
    if key == "report":
        from report_scale import generate

        # cached per clean commit; a tree with changes generates its run afresh
        clean = not opts.tree_id.endswith("+dirty")
        runs = _cache_root() / "run_all" / "report-runs" / opts.tree_id if clean else None
        run_dir = (runs or Path(tempfile.mkdtemp(prefix="dabench-run-all-"))) / f"run{point}"
        if not (run_dir / "grades.jsonl").exists():
            generate(run_dir, int(point))
        done = subprocess.run(
            [sys.executable, str(root / "benchmarks" / "report_scale.py"), "--child", str(run_dir)],
            capture_output=True,
            text=True,
            env=_env(root),
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"report_scale failed:\n{done.stderr[-3000:]}")
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        keep = ("total_s", "cpu_s", "load_s", "html_s", "peak_rss_mb")
        return {k: float(figures[k]) for k in keep}
    raise SystemExit(f"unknown child {key!r}")


# --- the parent ---------------------------------------------------------------------------


def _roundtrip(root: Path, calls: int, world: Path | None, quick: bool) -> dict[str, float]:
    argv = [sys.executable, "-m", "benchmarks.platform_roundtrip", "--calls", str(calls)]
    if quick:
        argv += ["--sessions", "2", "--session-calls", "5"]
    if world:
        argv += ["--world", str(world)]
    done = subprocess.run(
        argv, cwd=root, env=_env(root), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"platform_roundtrip exited {done.returncode}: {done.stderr[-1500:]}")
    out = {
        re.sub(r"\W+", "_", name.strip()).strip("_").lower() + "_over_direct_ms": float(ms)
        for name, ms in OVER_DIRECT.findall(done.stdout)
    }
    if m := THROUGHPUT.search(done.stdout):
        out["concurrent_calls_per_s"] = float(m.group(1))
    return out


def measure_once(
    key: str, point: str, root: Path, tree_id: str, world: Path | None, opts: argparse.Namespace
) -> dict[str, float]:
    """One measurement of ``key`` at ``point`` with the tree at ``root``, in a child; ``world``
    (else the tree's own cached world 930/1: the generator may differ between commits)."""
    if key == "roundtrip":
        return _roundtrip(root, int(point), world, opts.quick)
    argv = [
        sys.executable, str(HERE / "run_all.py"), "--child", key, "--point", point,
        "--root", str(root), "--tree-id", tree_id, "--episodes", str(opts.episodes),
        "--latency-ms", str(opts.latency_ms), "--calls", str(opts.calls),
    ]  # fmt: skip
    if world:
        argv += ["--world", str(world)]
    done = subprocess.run(argv, cwd=root, env=_env(root), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{key} {point} exited {done.returncode}: {done.stderr[-1500:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def baseline_tree(rev: str) -> tuple[Path, str]:
    """A read-only export of ``rev``'s tree under the cache (made once per commit)."""
    try:
        sha = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    except subprocess.CalledProcessError as exc:
        raise SystemExit(
            f"--baseline-commit {rev}: not a commit here ({exc.stderr.strip()})"
        ) from None
    out = _cache_root() / "run_all" / "trees" / sha
    if not (out / "src" / "dabench").is_dir():
        out.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(["git", "archive", sha], cwd=ROOT, stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(out)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise SystemExit(f"git archive {sha} failed")
    return out, sha


def _tree_id(root: Path) -> str:
    """The commit of a checkout (with ``+dirty`` when it has changes), else its path."""
    try:
        sha = _git("rev-parse", "HEAD", cwd=root)
        dirty = _git("status", "--porcelain", "--untracked-files=no", cwd=root)
    except (subprocess.CalledProcessError, FileNotFoundError):
        return re.sub(r"\W+", "_", str(root))
    return sha + ("+dirty" if dirty else "")


def points(opts: argparse.Namespace) -> list[tuple[str, str]]:
    """The (benchmark, point) pairs to measure."""
    chosen = [k for k in opts.only.split(",") if k] or list(KEYS)
    unknown = set(chosen) - set(KEYS)
    if unknown:
        raise SystemExit(f"--only: unknown {sorted(unknown)}; choose from {', '.join(KEYS)}")
    out: list[tuple[str, str]] = []
    for key in chosen:
        if key == "runner":
            out += [("runner", str(c)) for c in opts.concurrency]
        elif key == "report":
            out += [("report", str(n)) for n in opts.report_episodes]
        else:
            out.append(("roundtrip", str(opts.roundtrip_calls)))
    return out


NAMES = {
    "runner": "runner_throughput.c{}",
    "report": "report_scale.n{}",
    "roundtrip": "platform_roundtrip",
}


def main() -> None:
    """Measure, write the JSON, print medians (and ratios against the baseline)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="the JSON (default: benchmarks-<time>.json)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions, interleaved")
    parser.add_argument("--only", default="", help=f"comma-separated subset of {','.join(KEYS)}")
    parser.add_argument("--baseline-commit", help="a commit to compare against (git revision)")
    parser.add_argument("--baseline-dir", type=Path, help="a checkout to compare against")
    parser.add_argument(
        "--world", type=Path, help="the current tree's built world (default: cached 930/1)"
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--episodes", type=int, default=320, help="episodes per runner level")
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2, help="tool calls per episode")
    parser.add_argument("--report-episodes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--roundtrip-calls", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="seconds: tiny sizes, 1 repetition")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--point", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--tree-id", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(_child(opts.child, opts.point, opts)))
        return
    if opts.quick:
        opts.repeat, opts.concurrency, opts.episodes, opts.latency_ms = 1, [4], 8, 20
        opts.report_episodes, opts.roundtrip_calls = [200], 10
    if opts.baseline_commit and opts.baseline_dir:
        raise SystemExit("give --baseline-commit or --baseline-dir, not both")
    trees: list[tuple[str, Path, str]] = [("current", ROOT, _tree_id(ROOT))]
    if opts.baseline_commit:
        path, sha = baseline_tree(opts.baseline_commit)
        trees.insert(0, ("baseline", path, sha))
    elif opts.baseline_dir:
        path = opts.baseline_dir.resolve()
        trees.insert(0, ("baseline", path, _tree_id(path)))
    if opts.world:
        opts.world = opts.world.resolve()
    todo = points(opts)
    records: list[dict[str, Any]] = []
    for rep in range(opts.repeat):
        order = trees if rep % 2 == 0 else trees[::-1]
        for key, point in todo:
            for role, root, tree_id in order:
                before = _load()
                world = opts.world if role == "current" else None
                try:
                    figures = measure_once(key, point, root, tree_id, world, opts)
                    error = None
                except RuntimeError as exc:  # recorded, not fatal: the other points still run
                    figures, error = {}, str(exc)[-800:]
                record = {
                    "benchmark": NAMES[key].format(point),
                    "tree": role,
                    "commit": tree_id,
                    "repetition": rep,
                    "load_before": before,
                    "load_after": _load(),
                    "finished": datetime.now(UTC).isoformat(timespec="seconds"),
                    "figures": figures,
                    "error": error,
                }
                records.append(record)
                said = figures or f"FAILED: {(error or '').strip().splitlines()[-1]}"
                print(f"  {record['benchmark']} [{role}] rep {rep}: {said}", flush=True)
    summary = summarise(records, [role for role, _, _ in trees])
    doc = {
        "cores": os.cpu_count(),
        "trees": {role: {"commit": tree_id, "path": str(root)} for role, root, tree_id in trees},
        "settings": {
            k: (str(v) if isinstance(v, Path) else v)
            for k, v in vars(opts).items()
            if k not in ("child", "point", "root", "tree_id", "out")
        },
        "measurements": records,
        "summary": summary,
    }
    out = opts.out or Path(tempfile.gettempdir()) / (
        f"dabench-benchmarks-{datetime.now(UTC):%Y%m%dT%H%M%S}.json"
    )
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print_summary(summary, len(trees) > 1)
    loads = [r["load_before"][0] for r in records] + [r["load_after"][0] for r in records]
    print(f"load average (1 min) during the run: {min(loads):.2f}-{max(loads):.2f} on "
          f"{os.cpu_count()} cores; every figure with its load average: {out}")  # fmt: skip


def summarise(records: list[dict[str, Any]], roles: list[str]) -> dict[str, dict[str, float]]:
    """Per ``benchmark.figure``: the median of each tree and, with a baseline, the ratio."""
    values: dict[str, dict[str, list[float]]] = {}
    for r in records:
        for name, value in r["figures"].items():
            key = f"{r['benchmark']}.{name}"
            values.setdefault(key, {}).setdefault(r["tree"], []).append(value)
    out: dict[str, dict[str, float]] = {}
    for key, by_tree in values.items():
        row = {role: statistics.median(v) for role, v in by_tree.items()}
        if "baseline" in roles and row.get("baseline") and "current" in row:
            row["ratio"] = row["current"] / row["baseline"]
        out[key] = row
    return out


def print_summary(summary: dict[str, dict[str, float]], baseline: bool) -> None:
    """One line per figure: current median, and baseline median and ratio."""
    head = f"{'figure':<62}{'current':>12}"
    if baseline:
        head += f"{'baseline':>12}{'ratio':>8}"
    print(head)
    for key, row in summary.items():
        line = f"{key:<62}{row.get('current', float('nan')):>12.3f}"
        if baseline:
            line += f"{row.get('baseline', float('nan')):>12.3f}"
            line += f"{row['ratio']:>8.2f}" if "ratio" in row else f"{'-':>8}"
        print(line)


if __name__ == "__main__":
    main()
