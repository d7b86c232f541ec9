"""``dabench platform serve --port 0`` listens on a free port and prints that port."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
from platform_helpers import RunningPlatform, stop_platform


def test_port_zero_prints_the_bound_port(world_dir: Path, auth_file: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    argv = [
        sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world_dir),
        "--profile", "a0", "--port", "0", "--auth", str(auth_file),
        "--state-dir", str(tmp_path / "state"),
    ]  # fmt: skip
    with log.open("wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT)
    platform = RunningPlatform("", proc, tmp_path / "state", log)
    try:
        deadline = time.monotonic() + 120
        found = None
        while found is None and time.monotonic() < deadline and proc.poll() is None:
            found = re.search(r"on http://127\.0\.0\.1:(\d+)/mcp", log.read_text())
            time.sleep(0.1)
        assert found is not None, log.read_text()
        port = int(found.group(1))
        assert port != 0
        url = f"http://127.0.0.1:{port}/healthz"
        while time.monotonic() < deadline:
            try:
                if httpx.get(url, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert httpx.get(url, timeout=5).status_code == 200
    finally:
        assert stop_platform(platform) == 0
