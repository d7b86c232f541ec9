"""Scale-out: episodes per second of the Ray executor on 1 and 2 nodes vs the local executor.

The fake provider answers every model call after a fixed latency (200 ms by default); each
episode makes ``calls`` tool calls on the reference platform (profile a0) and one final answer.
The per-node concurrency is fixed (``--per-node``): the local executor runs that many episodes
at once, the Ray executor that many per node. One run measures, in this order: the local
executor; a real loopback Ray cluster with one node (``ray start --head``); the same cluster
after a second node joins (``ray start --address``, its own raylet). Episodes per second count
the episode phase only (targets or workers already started). It prints each figure as a ratio
measured in this run:

* 2 Ray nodes / 1 Ray node (target >= 1.8x)
* Ray on 1 node / the local executor (target >= 0.9x)

    python benchmarks/scale_out.py [--episodes 64] [--per-node 4] [--latency-ms 200] [--calls 2]

Both nodes share this host, so the 2-node figure also shows what the host's cores allow.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.harness.ray_cluster

from tests.harness.ray_cluster import RayCluster

import dabench
from dabench.runner.experiment import Experiment
from dabench.runner.run import ExperimentRun, RunSummary


def experiment(episodes: int, per_node: int, latency_ms: int, calls: int) -> Experiment:
    """One reference-platform arm with the fake provider over the smoke tasks of world 930."""
    probe = Experiment.model_validate(
        {"name": "probe", "tasks": {"smoke": True, "suites": ["s1", "s2", "s3"]},
         "arms": [{"name": "a0", "target": {"kind": "reference"}, "agent": {"kind": "oracle"}}]}
    )  # fmt: skip
    from dabench.runner.run import load_task_set

    tasks = len(load_task_set(probe, Path.cwd()).tasks)
    k = max(1, -(-episodes // tasks))
    return Experiment.model_validate(
        {
            "name": "scale-out",
            "world": {"seed": 930, "scale": 1},
            "tasks": {"smoke": True, "suites": ["s1", "s2", "s3"]},
            "k": k,
            "concurrency": per_node,
            "episode_timeout_s": 120,
            "arms": [
                {
                    "name": "a0",
                    "target": {"kind": "reference", "profile": "a0"},
                    "agent": {
                        "kind": "llm",
                        "model": f"fake:latency={latency_ms}ms,calls={calls},search=off",
                    },
                }
            ],
        }
    )


def measure(exp: Experiment, out: Path, executor: str, address: str | None) -> RunSummary:
    """Run ``exp`` into ``out``; the summary (episodes, episode-phase wall time)."""
    run = ExperimentRun(
        exp, out, experiment_dir=out.parent, console=Console(stderr=True, quiet=True),
        progress=False, executor=executor, ray_address=address,  # type: ignore[arg-type]
    )  # fmt: skip
    summary = asyncio.run(run.execute())
    bad = sum(summary.statuses.values()) - summary.statuses["completed"]
    if bad:
        raise SystemExit(f"{executor}: {bad} episode(s) not completed: {summary.statuses}")
    return summary


def main() -> None:
    """Measure and print the table and the two ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--per-node", type=int, default=4)
    parser.add_argument("--latency-ms", type=int, default=200)
    parser.add_argument("--calls", type=int, default=2)
    parser.add_argument(
        "--quick", action="store_true", help="seconds: 4 episodes, 2 per node, 20 ms"
    )
    args = parser.parse_args()
    if args.quick:
        args.episodes, args.per_node, args.latency_ms = 4, 2, 20
    exp = experiment(args.episodes, args.per_node, args.latency_ms, args.calls)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a loopback cluster of our own
    src = str(Path(dabench.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    rows: dict[str, RunSummary] = {}
    with tempfile.TemporaryDirectory(prefix="scale-out-") as tmp:
        root = Path(tmp)
        rows["local"] = measure(exp, root / "local", "local", None)
        cluster = RayCluster(env, cpus=1)
        try:
            cluster.start_head()
            rows["ray, 1 node"] = measure(exp, root / "ray1", "ray", cluster.address)
            cluster.add_node()
            rows["ray, 2 nodes"] = measure(exp, root / "ray2", "ray", cluster.address)
        finally:
            cluster.stop()
    rate = {name: s.finished / s.episodes_wall_s for name, s in rows.items()}
    table = Table("executor", "episodes", "episode phase s", "episodes/s", "per node", title=(
        f"scale-out: fake provider {args.latency_ms} ms/call, {args.calls} tool calls/episode, "
        f"{args.per_node} episodes in flight per node"
    ))  # fmt: skip
    for name, s in rows.items():
        nodes = ", ".join(str(n) for _, n in sorted(s.per_node.items())) or "-"
        table.add_row(name, str(s.finished), f"{s.episodes_wall_s:.2f}", f"{rate[name]:.2f}", nodes)
    console = Console()
    console.print(table)
    two = rate["ray, 2 nodes"] / rate["ray, 1 node"]
    one = rate["ray, 1 node"] / rate["local"]
    console.print(f"2 Ray nodes / 1 Ray node: {two:.2f}x (target >= 1.8x)")
    console.print(f"Ray on 1 node / local executor: {one:.2f}x (target >= 0.9x)")


if __name__ == "__main__":
    main()
