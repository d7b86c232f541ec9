"""McpConnection's life cycle against real stdio processes."""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

import pytest

from dabench.errors import HarnessError
from dabench.targets.mcp_connection import McpConnection, McpEndpoint


def _running(marker: str) -> list[int]:
    """Process ids whose command line holds ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue
    return found


async def test_closing_while_the_handshake_waits_stops_the_server_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stdio program that never answers ``initialize`` (an HTTP server started as stdio,
    a hung server): close() stops it without waiting ``close_wait_s`` for a session that
    never came. The wait is set to an hour, so waiting for it fails on the safety net."""
    monkeypatch.setattr(McpConnection, "close_wait_s", 3600.0)
    marker = f"dabench-silent-{uuid.uuid4().hex}"
    silent = [sys.executable, "-c", "import sys, time; time.sleep(3600)", marker]
    conn = McpConnection(McpEndpoint(command=silent, errlog=tmp_path / "stderr.log"))
    opening = asyncio.create_task(conn.open(3600))
    for _ in range(600):  # until the program runs (safety net: 60 s)
        if _running(marker):
            break
        await asyncio.sleep(0.1)
    assert _running(marker)
    closing = asyncio.create_task(conn.close())
    done, _ = await asyncio.wait({closing}, timeout=300)  # safety net, never reached when right
    if closing not in done:
        closing.cancel()
        pytest.fail("close() waited for a handshake that never came")
    with pytest.raises(HarnessError, match="cannot connect"):
        await opening
    for _ in range(600):  # the SDK reaps it on the way out; safety net: 60 s
        if not _running(marker):
            break
        await asyncio.sleep(0.1)
    assert _running(marker) == []
