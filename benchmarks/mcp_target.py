"""Generic ``mcp`` target vs the ``reference`` target: episodes/s of the oracle on the S1 and
S3 smoke tasks against the same reference platform (profile a2).

Arms (one run each, ``k`` attempts per task, the episode phase timed with the target already
up, grading not included):

- ``reference``: the reference target (lean stateless client, one connection per identity);
- ``mcp-http``: the generic target on a served platform (``dabench platform serve``), a new
  MCP client session per episode on a pooled transport, the handle minted by ``platform_info``
  (``session_tool``), ``session_id`` injected, audit read back from the admin API;
- ``mcp-stdio``: the generic target spawning ``dabench platform serve --transport stdio``, one
  server process per episode;
- ``mcp-stdio-shared``: the same with ``share_process: true`` (one process for all episodes).

    python benchmarks/mcp_target.py [--world DIR] [--k 3] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from rich.console import Console

from dabench.journal.store import Journal
from dabench.runner.experiment import Experiment
from dabench.runner.run import ExperimentRun
from dabench.targets.process import free_port
from dabench.world import ensure_world
from dabench.world.cache import world_cache_dir

KEY, ADMIN = "bench-key-000001", "bench-admin-00001"


def serve(world: Path, work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``dabench platform serve --profile a2`` over HTTP; returns the process and base URL."""
    auth = work / "auth.yaml"
    auth.write_text(
        yaml.safe_dump({"identities": [{"key": KEY, "user": "default"}], "admin_keys": [ADMIN]})
    )
    port = free_port()
    argv = [
        sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world),
        "--profile", "a2", "--port", str(port), "--auth", str(auth),
        "--state-dir", str(work / "served-state"),
    ]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the platform did not become healthy")


def targets(world: Path, base: str, work: Path) -> dict[str, dict[str, Any]]:
    """The four target configs."""
    stdio = [
        sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world),
        "--profile", "a2", "--transport", "stdio", "--state-dir", str(work / "stdio-state"),
    ]  # fmt: skip
    minted = {"session_argument": "session_id", "session_tool": {"name": "platform_info"}}
    return {
        "reference": {"kind": "reference", "profile": "a2"},
        "mcp-http": {
            "kind": "mcp",
            "url": base + "/mcp",
            "headers": {"Authorization": f"Bearer {KEY}"},
            "audit": {"base_url": base, "admin_key": ADMIN},
            **minted,
        },
        "mcp-stdio": {"kind": "mcp", "command": stdio, **minted},
        "mcp-stdio-shared": {"kind": "mcp", "command": stdio, "share_process": True, **minted},
    }


async def measure(
    name: str,
    target: dict[str, Any],
    world: Path,
    work: Path,
    k: int,
    concurrency: int,
    suites: list[str],
) -> tuple[int, int, float, int]:
    """(episodes, completed, episode-phase seconds, tool calls) of one arm."""
    exp = Experiment.model_validate(
        {
            "name": f"bench-{name}",
            "world": {"dir": str(world)},
            "tasks": {"smoke": True},
            "k": k,
            "concurrency": concurrency,
            "episode_timeout_s": 300,
            "arms": [
                {
                    "name": name,
                    "target": target,
                    "agent": {"kind": "oracle"},
                    "suites": suites,
                }
            ],
        }
    )
    run_dir = work / f"run-{name}"
    run = ExperimentRun(
        exp, run_dir, experiment_dir=work, console=Console(quiet=True), progress=False
    )
    summary = await run.execute()
    wall = summary.episodes_wall_s
    episodes = Journal(run_dir).load()
    done = sum(1 for e in episodes if e.status == "completed")
    calls = sum(len(e.tool_calls) for e in episodes)
    return len(episodes), done, wall, calls


def main() -> None:
    """Parse arguments, run the four arms, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--world", type=Path, default=None)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--suites", default="s1,s3", help="suites of the smoke tasks played")
    parser.add_argument("--quick", action="store_true", help="seconds: k = 1, S1 only")
    args = parser.parse_args()
    if args.quick:
        args.k, args.suites = 1, "s1"
    world = args.world or ensure_world(930, 1, world_cache_dir())
    with tempfile.TemporaryDirectory(prefix="dabench-mcp-bench-") as tmp:
        work = Path(tmp)
        proc, base = serve(world, work)
        try:
            suites = args.suites.split(",")
            print(f"oracle, {'+'.join(suites)} smoke tasks, k={args.k}, c={args.concurrency}")
            print(f"{'arm':18} {'episodes':>8} {'completed':>9} {'wall s':>7} {'ep/s':>6} calls")
            for name, target in targets(world, base, work).items():
                n, done, wall, calls = asyncio.run(
                    measure(name, target, world, work, args.k, args.concurrency, suites)
                )
                print(f"{name:18} {n:8d} {done:9d} {wall:7.2f} {n / wall:6.2f} {calls}")
        finally:
            proc.terminate()
            proc.wait(timeout=20)


if __name__ == "__main__":
    main()
