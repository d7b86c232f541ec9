"""Interrupting the runner: SIGTERM stops it cleanly (platform stopped, exit 130); SIGKILL
mid-run loses only in-flight episodes (the platform dies with it); resuming completes the run
with exactly one episode per (arm, task, attempt)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from dabench.journal.store import Journal
from dabench.runner.experiment import Experiment
from dabench.runner.run import ExperimentRun

from .conftest import DATA

EPISODES = 12


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


def wait_gone(pids: list[int], seconds: float = 20) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return not any(alive(p) for p in pids)


def start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "dabench.cli", "run", *args, "--no-progress", "--no-grade"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def interrupt_after(
    proc: subprocess.Popen[bytes], journal: Path, lines: int, sig: int
) -> list[int]:
    """Send ``sig`` once the journal has ``lines`` episodes; return the runner's children."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and journal.read_bytes().count(b"\n") >= lines:
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()[0].decode()[-3000:]
    children = children_of(proc.pid)
    assert children, "the reference platform should be a child of the runner"
    proc.send_signal(sig)
    return children


@pytest.mark.slow
def test_sigterm_then_sigkill_then_resume(tmp_path: Path, real_world: Path) -> None:
    exp = {
        "name": "kill",
        "world": {"dir": str(real_world)},
        "tasks": {"builtin": False, "files": [str(DATA / "tasks_w930.yaml")]},
        "k": EPISODES // 3,
        "concurrency": 2,
        "arms": [
            {
                "name": "a0",
                "target": {"kind": "reference", "profile": "a0"},
                "agent": {"kind": "llm", "model": "fake:latency=100ms,calls=2,sql=SELECT 7"},
            }
        ],
    }
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(exp))
    run_dir = tmp_path / "run"
    journal = run_dir / "episodes.jsonl"

    # SIGTERM: the run stops, says how to resume, exits 130 and stops the platform.
    proc = start(str(path), "--out", str(run_dir))
    platform = interrupt_after(proc, journal, 2, signal.SIGTERM)
    output = proc.communicate(timeout=60)[0].decode()
    assert proc.returncode == 130, output[-3000:]
    assert f"dabench run --resume {run_dir}" in output
    assert wait_gone(platform, 5)
    after_term = len(Journal(run_dir).load())

    # SIGKILL mid-run: the platform dies with the runner; the journal stays valid.
    proc = start("--resume", str(run_dir))
    platform = interrupt_after(proc, journal, after_term + 2, signal.SIGKILL)
    proc.wait(timeout=30)
    assert wait_gone(platform)
    Journal(run_dir).repair()
    before = Journal(run_dir).load()
    assert after_term + 2 <= len(before) < EPISODES

    # Resume to the end: only the missing episodes run, each key exactly once.
    resumed = ExperimentRun(
        Experiment.model_validate(exp), run_dir, experiment_dir=tmp_path, resume=True,
        console=Console(quiet=True), progress=False,
    )  # fmt: skip
    summary = asyncio.run(resumed.execute())
    assert summary.already_done == len(before)
    assert summary.finished == EPISODES - len(before)
    episodes = Journal(run_dir).load()
    counts = Counter(e.key for e in episodes)
    assert len(counts) == EPISODES and set(counts.values()) == {1}
    assert {e.key for e in before} <= set(counts)
    assert all(e.status == "completed" and e.audit is not None and e.audit.ok for e in episodes)
