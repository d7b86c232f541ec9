"""Measure statistics and both reports on synthetic runs of 10,000 and 100,000 episodes.

Usage::

    python benchmarks/report_scale.py [--episodes 10000 100000] [--keep DIR]

For each size a synthetic run (4 arms x N/20 tasks x k = 5, transcripts included) is written
first (not timed), then a fresh child process loads it, computes ``stats.json`` (5,000
bootstrap resamples) and writes ``report.md`` and ``report.html``. The child reports the
wall time of each phase, the process CPU time of the whole (less sensitive to other load on
the machine), its peak resident memory (``ru_maxrss``), and the RSS right after imports so
the pipeline's own share is visible. Targets (issue 31): 10,000 episodes in <= 2 s on a quiet
machine; memory at 100,000 episodes that does not grow with the journal (the report streams
it: docs/reports.md, "Measured performance").
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARMS = 4
K = 5


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure(run_dir: Path) -> dict[str, float]:
    """Run ``write_reports`` (what ``dabench report`` does) and time its phases."""
    from dabench.report.build import write_reports

    out: dict[str, float] = {"rss_after_imports_mb": _rss_mb()}
    marks: list[tuple[str, float]] = []
    cpu_marks: list[tuple[str, float]] = []

    def mark(msg: str) -> None:
        marks.append((msg, time.perf_counter()))
        cpu_marks.append((msg, time.process_time()))

    t0, c0 = time.perf_counter(), time.process_time()
    write_reports(run_dir, progress=mark)
    end, c1 = time.perf_counter(), time.process_time()
    starts, cpu = dict(marks), dict(cpu_marks)
    out.update(
        load_cpu_s=cpu["computing statistics"] - c0,
        stats_cpu_s=cpu["writing report.md"] - cpu["computing statistics"],
        html_cpu_s=c1 - cpu["writing report.html"],
    )
    out.update(
        load_s=starts["computing statistics"] - t0,
        stats_s=starts["writing report.md"] - starts["computing statistics"],
        markdown_s=starts["writing report.html"] - starts["writing report.md"],
        html_s=end - starts["writing report.html"],
        total_s=end - t0,
        cpu_s=c1 - c0,
        peak_rss_mb=_rss_mb(),
        html_mb=(run_dir / "report.html").stat().st_size / 1e6,
        journal_mb=(run_dir / "episodes.jsonl").stat().st_size / 1e6,
    )
    return out


def generate(run_dir: Path, episodes: int) -> float:
    """Write a synthetic run of ``episodes`` episodes; returns the seconds it took."""
    from dabench.stats.synthetic import SyntheticArm, SyntheticSpec, write_synthetic_run

    tasks = episodes // (ARMS * K)
    arms = [
        SyntheticArm("a0", 0.2, "a0", mean_calls=9.0),
        SyntheticArm("a1", 0.8, "a1", mean_calls=7.0),
        SyntheticArm("a2", 1.6, "a2", gate=True),
        SyntheticArm("a3", 1.8, "a3", gate=True),
    ]
    t0 = time.perf_counter()
    write_synthetic_run(run_dir, SyntheticSpec(arms=arms, tasks=tasks, k=K, run_id=run_dir.name))
    return time.perf_counter() - t0


def main() -> None:
    """Generate, then measure in a fresh child process, for every requested size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--keep", type=Path, help="Keep the synthetic runs under this directory.")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="seconds: 200 episodes")
    args = parser.parse_args()
    if args.quick:
        args.episodes = [200]
    if args.child:
        print(json.dumps(measure(args.child)))
        return
    root = args.keep or Path(tempfile.mkdtemp(prefix="dabench-scale-"))
    print(f"runs under {root}")
    print(
        f"{'episodes':>9} {'gen s':>7} {'load s':>7} {'stats s':>8} {'md s':>6} {'html s':>7} "
        f"{'total s':>8} {'cpu s':>6} {'peak MB':>8} {'imports MB':>10} {'journal MB':>10} "
        f"{'html MB':>8}"
    )
    for n in args.episodes:
        run_dir = root / f"run{n}"
        reuse = (run_dir / "episodes.jsonl").exists() and (run_dir / "grades.jsonl").exists()
        gen = 0.0 if reuse else generate(run_dir, n)  # --keep DIR from an earlier run: reused
        child = subprocess.run(
            [sys.executable, __file__, "--child", str(run_dir)],
            capture_output=True,
            text=True,
        )
        if child.returncode != 0:
            sys.exit(f"measuring {run_dir} failed:\n{child.stderr[-3000:]}")
        r = json.loads(child.stdout.strip().splitlines()[-1])
        print(
            f"{n:>9,} {gen:>7.1f} {r['load_s']:>7.2f} {r['stats_s']:>8.2f} "
            f"{r['markdown_s']:>6.2f} {r['html_s']:>7.2f} {r['total_s']:>8.2f} {r['cpu_s']:>6.2f} "
            f"{r['peak_rss_mb']:>8.0f} {r['rss_after_imports_mb']:>10.0f} "
            f"{r['journal_mb']:>10.1f} {r['html_mb']:>8.1f}",
            flush=True,
        )
        print(
            f"{'':>9} cpu: load {r['load_cpu_s']:.2f} s, stats {r['stats_cpu_s']:.2f} s, "
            f"html {r['html_cpu_s']:.2f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
