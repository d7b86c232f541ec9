"""tests/cpu_log.py: one line per test with its wall and CPU time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cpu_log import CPU_LOG_ENV

ROOT = Path(__file__).resolve().parents[1]

SAMPLE = """
import subprocess, sys, time

def test_spins():
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass

def test_waits_on_a_child():
    subprocess.run([sys.executable, "-c", "import time; time.sleep(0.5)"], check=True)
"""


def test_each_test_gets_a_line_with_wall_own_and_child_cpu(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE, encoding="utf-8")
    log = tmp_path / "cpu.log"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.cpu_log",
         "--rootdir", str(tmp_path), str(tmp_path / "test_sample.py")],
        cwd=ROOT, env={**os.environ, CPU_LOG_ENV: str(log)},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split("\t") for line in log.read_text(encoding="utf-8").splitlines()]
    assert [r[3] for r in rows] == [
        "test_sample.py::test_spins",
        "test_sample.py::test_waits_on_a_child",
    ]
    spins, waits = ([float(x) for x in r[:3]] for r in rows)
    assert spins[1] >= 0.3  # its own CPU: at least what it spun
    assert waits[0] >= 0.5 and waits[1] < waits[0]  # it waited longer than it computed
