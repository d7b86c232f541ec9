"""A real two-node Ray cluster on loopback, started with the ``ray`` CLI.

The head runs ``ray start --head``; every further node runs ``ray start --address ... --block``
as its own process group (its own raylet and workers), so one node can be killed alone:
``SIGKILL`` to its group and to every process descended from it. ``ray stop`` is global to
the host, so teardown kills the groups the cluster started and never calls it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HANDED_OUT: set[int] = set()
"""Ports already given to a Ray component by this process: the OS may offer a released port
again, and two components on one port make ``ray start`` refuse to start."""


def _descendants(root: int) -> list[int]:
    """Every live process descended from ``root`` (read from /proc: children, their
    children, and so on)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # the command name may hold spaces and parentheses: the fields follow its last ')'
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def free_port() -> int:
    """A free loopback TCP port not handed out before in this process."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def _ports() -> list[str]:
    """Distinct ports for one node's agents (two nodes share a host)."""
    names = [
        "--node-manager-port",
        "--object-manager-port",
        "--dashboard-agent-grpc-port",
        "--dashboard-agent-listen-port",
        "--metrics-export-port",
        "--runtime-env-agent-port",
    ]
    args = []
    for name in names:
        args += [name, str(free_port())]
    return args


class RayCluster:
    """Head plus nodes on 127.0.0.1; ``address`` is what ``--ray-address`` takes."""

    def __init__(self, env: dict[str, str], *, cpus: int = 2) -> None:
        self.env = env
        self.cpus = cpus
        self.temp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # short: socket paths
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[subprocess.Popen[bytes]] = []
        self.last_error = ""
        self.ray = str(Path(sys.executable).parent / "ray")

    def _start(self, args: list[str], log: str) -> subprocess.Popen[bytes]:
        out = (self.temp / log).open("wb")
        proc = subprocess.Popen(
            [self.ray, "start", "--block", "--disable-usage-stats", *args],
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.nodes.append(proc)
        return proc

    def start_head(self) -> None:
        """``ray start --head`` and wait until it says it started (``ray start`` itself waits
        until the GCS lists the node)."""
        self._start(
            [
                "--head",
                f"--port={self.port}",
                "--node-ip-address=127.0.0.1",
                f"--num-cpus={self.cpus}",
                "--include-dashboard=false",
                f"--temp-dir={self.temp}",
                "--min-worker-port=0",
                "--max-worker-port=0",
                *_ports(),
            ],
            "head.log",
        )
        self.wait_started("head.log")

    def add_node(self) -> subprocess.Popen[bytes]:
        """A further node (its own raylet) joined with ``ray start --address``."""
        proc = self._start(
            [
                f"--address={self.address}",
                "--node-ip-address=127.0.0.1",
                f"--num-cpus={self.cpus}",
                "--min-worker-port=0",
                "--max-worker-port=0",
                *_ports(),
            ],
            f"node{len(self.nodes)}.log",
        )
        self.wait_started(f"node{len(self.nodes) - 1}.log")
        self.wait_nodes(len(self.nodes))
        return proc

    def alive_nodes(self) -> list[str]:
        """Node ids the cluster reports alive (asked from a separate driver process)."""
        code = (
            f"import ray,json;ray.init(address={self.address!r},logging_level='ERROR');"
            "print(json.dumps([n['NodeID'] for n in ray.nodes() if n['Alive']]))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], env=self.env, capture_output=True, text=True, timeout=60
        )
        if out.returncode != 0:
            self.last_error = out.stderr[-2000:]
            return []
        return list(json.loads(out.stdout.strip().splitlines()[-1]))

    def wait_started(self, log: str, seconds: float = 90) -> None:
        """Wait until a node's ``ray start`` says its runtime started (cheaper than asking
        the cluster from a new driver process every half second)."""
        path = self.temp / log
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if "Ray runtime started" in path.read_text(errors="replace"):
                return
            if self.nodes[-1].poll() is not None:
                break
            time.sleep(0.2)
        raise RuntimeError(f"ray start: not started\n{path.read_text(errors='replace')[-3000:]}")

    def wait_nodes(self, count: int, seconds: float = 60) -> None:
        """Wait until ``count`` nodes are alive."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if len(self.alive_nodes()) >= count:
                return
            time.sleep(0.5)
        logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in self.temp.glob("*.log"))
        raise RuntimeError(
            f"ray cluster: {count} node(s) not alive after {seconds}s\n{logs}\n{self.last_error}"
        )

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL one node: every process descended from it (its raylet, workers and
        actors, whatever process group or session they moved to), then its group. A worker
        outside the group would otherwise live on and finish its episodes, so nothing would
        be lost and re-queued."""
        tree = _descendants(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in tree:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop(self) -> None:
        """Kill every node this cluster started (SIGTERM, then SIGKILL) and remove its files."""
        for proc in reversed(self.nodes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for proc in reversed(self.nodes):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        shutil.rmtree(self.temp, ignore_errors=True)
