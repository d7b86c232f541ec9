"""Connections that go idle longer than every keep-alive in play, against real servers.

The servers here close idle keep-alive connections after ``KEEP_ALIVE_S`` (1 s; uvicorn's
default is 5 s) and every test idles ``IDLE_S`` (2 s) between two calls, longer than the
server's keep-alive and every client's idle limit: the lean loopback client (at its default
limit and with a limit far above the server's, so that only the peer-closed check saves it),
the official MCP client, the admin/audit ``httpx`` clients, the Kibana client and both
provider SDKs. No call may fail.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from dabench.keepalive import client_idle_limit
from dabench.providers import make_provider
from dabench.providers.base import ChatMessage
from dabench.runner.experiment import Experiment
from dabench.runner.run import ExperimentRun
from dabench.targets.base import TargetContext
from dabench.targets.kibana.client import KibanaClient
from dabench.targets.loopback_http import LoopbackHttp, _peer_closed
from dabench.targets.mcp import McpTarget, McpTargetConfig, SessionToolConfig
from dabench.targets.mcp_lean import LeanMcpConnection
from dabench.targets.process import ServerProcess, free_port
from dabench.targets.reference import ReferenceTarget, ReferenceTargetConfig

KEEP_ALIVE_S = 1.0
IDLE_S = 2.0
ROOT = Path(__file__).resolve().parents[2]


def _wait_listening(port: int, proc: ServerProcess) -> None:
    for _ in range(300):
        if not proc.running():
            raise RuntimeError(f"server exited: {proc.log_tail()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server not listening: {proc.log_tail()}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``tests.harness.keepalive_server`` (uvicorn, keep-alive 1 s) in its own process."""
    port = free_port()
    path = os.pathsep.join([str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    argv = [sys.executable, "-m", "tests.harness.keepalive_server", str(port), str(KEEP_ALIVE_S)]
    log = tmp_path_factory.mktemp("keepalive") / "server.log"
    proc = ServerProcess(argv, log, env={"PYTHONPATH": path})
    proc.start()
    try:
        _wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.kill_now()


async def _until_server_closed(http: LoopbackHttp) -> None:
    """Wait until the server has closed every pooled connection (its keep-alive timer fires
    after ``KEEP_ALIVE_S``, later on a busy machine): the verdict is then the client's check,
    never how fast the server's timer ran. The deadline is only a safety net."""
    deadline = time.monotonic() + 120
    while not all(_peer_closed(p.reader, p.writer) for p in http._idle):
        assert time.monotonic() < deadline, "the server never closed its idle connections"
        await asyncio.sleep(0.05)


async def _echo(http: LoopbackHttp, n: int) -> None:
    responses = await asyncio.gather(*(http.request("POST", "/echo", body=b"x") for _ in range(n)))
    assert [json.loads(r.body)["body"] for r in responses] == ["x"] * n


@pytest.mark.parametrize("idle_s", [None, 3600.0], ids=["aligned", "trusting"])
async def test_three_idle_connections_then_one_request(server: str, idle_s: float | None) -> None:
    """The issue's repro: 3 pooled connections, idle past the keep-alive, one request.
    ``aligned``: the client's own idle limit (80 % of the platform's) drops them;
    ``trusting``: a limit far above the server's, so the peer-closed check must drop them."""
    limit = client_idle_limit(KEEP_ALIVE_S) if idle_s is None else idle_s
    http = LoopbackHttp(server, idle_s=limit)
    try:
        await _echo(http, 3)
        assert http.stats.opened == 3
        await asyncio.sleep(IDLE_S)
        if idle_s is not None:
            await _until_server_closed(http)
        await _echo(http, 1)
        await _echo(http, 3)
        if idle_s is None:
            assert http.stats.expired == 3
        else:
            assert http.stats.peer_closed == 3
        assert http.stats.resent == 0
    finally:
        await http.aclose()


@pytest.mark.slow
async def test_lean_mcp_and_sdk_mcp_and_admin_after_idle(tmp_path: Path, real_world: Path) -> None:
    """The reference platform at a 1 s keep-alive: the lean client, the official client (the
    generic ``mcp`` target on the same server), the audit read-back and the admin API all
    work after idling past it."""
    ref = ReferenceTarget(
        ReferenceTargetConfig(profile="a0", keep_alive_s=KEEP_ALIVE_S),
        TargetContext(real_world, tmp_path / "ref"),
    )
    await ref.start()
    generic = McpTarget(
        McpTargetConfig(
            url=ref.base_url + "/mcp",
            headers={"Authorization": f"Bearer {ref.keys['default']}"},
            idle_s=3600.0,  # trusting: httpx must drop the connections the server closed
            session_tool=SessionToolConfig(name="platform_info"),
            session_argument="session_id",
        ),
        TargetContext(real_world, tmp_path / "mcp"),
    )
    try:
        session = await ref.open_session()
        await generic.start()
        generic_session = await generic.open_session()
        for idle in (IDLE_S, 0.0):
            lean = await session.call("sql_query", {"sql": "SELECT 1 AS x"})
            sdk = await generic_session.call("sql_query", {"sql": "SELECT 2"})
            assert not lean.is_error and not sdk.is_error, (lean.text, sdk.text)
            audit = await ref.read_audit([session.handle], 1)
            assert audit.audit_rows >= 1
            assert await ref.admin("GET", "/api/v1/admin/audit/events") is not None
            await asyncio.sleep(idle)
        conn = await ref.connection("default")
        assert isinstance(conn, LeanMcpConnection) and conn.pool is not None
        assert conn.pool.idle_s == client_idle_limit(KEEP_ALIVE_S)
        assert conn.pool.stats.expired >= 1 and conn.pool.stats.resent == 0
    finally:
        await generic.stop()
        await ref.stop()


async def test_kibana_client_after_idle(server: str) -> None:
    client = KibanaClient(server, "key")
    try:
        for idle in (IDLE_S, 0.0):
            status = await client.status()
            assert status["version"]["number"] == "9.3.0"
            await asyncio.sleep(idle)
        assert client.retries == 0
    finally:
        await client.aclose()


@pytest.mark.slow  # importing the SDKs takes seconds
@pytest.mark.parametrize("spec", ["openai:gpt-4.1", "anthropic:claude-sonnet-4-6"])
async def test_provider_clients_after_idle(server: str, spec: str) -> None:
    base = server + "/v1" if spec.startswith("openai") else server
    provider = make_provider(spec, base_url=base, api_key="k")
    messages = [ChatMessage(role="user", content="hi")]
    for idle in (IDLE_S, 0.0):
        response = await provider.complete(
            messages, system="s", tools=[], max_tokens=10, temperature=0.0
        )
        assert response.text == "ok"
        await asyncio.sleep(idle)


@pytest.mark.slow
async def test_episodes_with_model_latency_past_the_keep_alive(
    tmp_path: Path, real_world: Path
) -> None:
    """Episodes whose model 'thinks' longer than the platform's keep-alive between tool
    calls: no harness error."""
    exp = Experiment.model_validate(
        {
            "name": "idle",
            "world": {"dir": str(real_world)},
            "tasks": {"smoke": True},
            "concurrency": 4,
            "arms": [
                {
                    "name": "a0",
                    "target": {"kind": "reference", "profile": "a0", "keep_alive_s": 0.5},
                    "agent": {"kind": "llm", "model": "fake:latency=0.8s,calls=2,search=off"},
                }
            ],
        }
    )
    run = ExperimentRun(
        exp, tmp_path / "run", experiment_dir=tmp_path, console=Console(quiet=True), progress=False
    )
    summary = await run.execute()
    assert summary.finished > 0 and not summary.harness_errors
    assert summary.statuses["completed"] == summary.finished
