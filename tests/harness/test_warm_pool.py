"""The warm pool of stdio server processes (``warm_pool`` on the ``mcp`` target): every
episode session owns a process of its own, none is ever reused, processes are started
before the sessions that take them, and stopping the target stops the ones not taken."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dabench.errors import HarnessError
from dabench.targets.base import TargetContext
from dabench.targets.mcp import McpTarget
from dabench.targets.process import pid_alive
from dabench.targets.registry import make_target

from .conftest import DATA

SERVER = [sys.executable, str(DATA / "pid_server.py")]


def _target(tmp_path: Path, **config: object) -> McpTarget:
    ctx = TargetContext(work_dir=tmp_path / "work", world_dir=tmp_path, experiment_dir=tmp_path)
    target = make_target({"kind": "mcp", "name": "pid", **config}, ctx)
    assert isinstance(target, McpTarget)
    return target


async def _pid(target: McpTarget) -> tuple[str, int]:
    session = await target.open_session()
    outcome = await session.call("whoami", {})
    assert not outcome.is_error, outcome.text
    return session.handle, int(outcome.text)


async def test_each_session_owns_a_fresh_prestarted_process(tmp_path: Path) -> None:
    started = tmp_path / "started.txt"
    target = _target(tmp_path, command=[*SERVER, "--started", str(started)], warm_pool=2)
    await target.start()
    assert target.describe()["mcp_sessions"] == "per-episode (warm pool of 2)"
    pids: list[int] = []
    for _ in range(3):
        handle, pid = await _pid(target)
        pids.append(pid)
        await target.end_episode([handle])
        assert not pid_alive(pid)  # the episode's process ends with it, never reused
    assert len(set(pids)) == 3
    await target.stop()
    lines = [int(p) for p in started.read_text().split()]
    # one for tools/list, three taken, and (up to) two warm ones stopped with the target
    assert set(pids) <= set(lines) and len(lines) <= 1 + 3 + 2
    assert not any(pid_alive(p) for p in lines)


async def test_concurrent_sessions_get_distinct_processes(tmp_path: Path) -> None:
    import asyncio

    target = _target(tmp_path, command=SERVER, warm_pool=1)
    await target.start()
    try:
        results = await asyncio.gather(*(_pid(target) for _ in range(3)))
        assert len({pid for _, pid in results}) == 3
    finally:
        await target.stop()


async def test_a_process_that_cannot_start_is_a_harness_error(tmp_path: Path) -> None:
    """A server that serves once (the tools listing) and then refuses to start: the session
    that takes a failed warm process gets the start's error; the target still stops."""
    once = tmp_path / "served-once"
    script = tmp_path / "once.py"
    script.write_text(
        "import os, runpy, sys\n"
        f"if os.path.exists({str(once)!r}): sys.exit('cannot start twice')\n"
        f"open({str(once)!r}, 'w').close()\n"
        f"sys.argv = [{str(DATA / 'pid_server.py')!r}]\n"
        f"runpy.run_path({str(DATA / 'pid_server.py')!r}, run_name='__main__')\n"
    )
    target = _target(tmp_path, command=[sys.executable, str(script)], warm_pool=2)
    await target.start()
    try:
        with pytest.raises(HarnessError, match="cannot connect to MCP server"):
            await target.open_session()
        with pytest.raises(HarnessError, match="cannot start twice"):
            await target.open_session()
    finally:
        await target.stop()


def test_warm_pool_needs_a_stdio_process_per_episode(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="'warm_pool' is for a stdio 'command'"):
        _target(tmp_path, url="http://127.0.0.1:1/mcp", warm_pool=2)
    with pytest.raises(Exception, match="not with 'share_process'"):
        _target(tmp_path, command=SERVER, warm_pool=2, share_process=True)
