"""SIGKILL the runner mid-run, resume: the journal holds exactly one episode per key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from dabench.journal.store import Journal

from .test_mcp_target import mcp_experiment


def children_of(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def run_cli(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "dabench.cli", "run", *args, "--no-progress", "--no-grade"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def test_sigkill_mid_run_then_resume(
    tmp_path: Path, mini_world: Path, everything_server: list[str]
) -> None:
    exp = mcp_experiment(tmp_path, mini_world, everything_server, k=8, latency="100ms")
    run_dir = tmp_path / "run"
    journal = run_dir / "episodes.jsonl"
    proc = run_cli(str(exp), "--out", str(run_dir))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_bytes().count(b"\n") >= 4:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()[0].decode()[-2000:]
    servers = children_of(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = Journal(run_dir).load()
    assert 4 <= len(before) < 24
    # The stdio server does not outlive the killed harness.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(alive(p) for p in servers):
        time.sleep(0.1)
    assert not any(alive(p) for p in servers)

    resumed = run_cli("--resume", str(run_dir))
    output = resumed.communicate(timeout=180)[0].decode()
    assert resumed.returncode == 0, output[-2000:]
    episodes = Journal(run_dir).load()
    counts = Counter(e.key for e in episodes)
    assert len(counts) == 24 and set(counts.values()) == {1}
    assert {e.key for e in before} <= set(counts)
    assert all(e.status == "completed" for e in episodes)
    assert f"{len(before)} already in the journal" in output
