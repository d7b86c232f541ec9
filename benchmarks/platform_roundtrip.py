"""Round-trip latency of the reference platform: MCP over HTTP and stdio vs. DuckDB in-process.

Starts ``dabench platform serve`` (profile a0: no enrichment, no gate, so the figure is
transport + session + guard + audit) as a real process on loopback, then measures a trivial
``sql_query`` through several clients, next to the same query on a read-only DuckDB
connection in this process (the limit) and through ``PlatformService.call`` without any
transport. Rows:

- in-process rows run back to back ("hot") and again with PACE_MS of idle before each call
  ("paced"), because a server sees a request after idling while the client works: on a
  2-core VM the same DuckDB query costs ~3x more after a few ms of idle than back to back;
- "in-process ASGI": the bare SDK app and the platform app driven without a socket or client
  (``benchmarks/asgi_driver.py``): what the server app itself costs per request;
- "bare SDK server": the official SDK's low-level server with a constant answer, no platform
  logic (the SDK + uvicorn floor); "JSON-RPC POST" rows post the exact request the SDK client
  sends with a plain keep-alive HTTP client, separating server from client cost;
- "dabench lean client": the stateless MCP client the harness uses to talk to the platform;
- "official client": the ``mcp`` SDK's ``Client`` over streamable HTTP and over stdio.

For every platform row the platform's own audit log gives each call's tool time
(``duration_ms``: session, guard, DuckDB, enrichment, serialisation); "transport" is the call's
latency minus its audited tool time, i.e. what MCP, HTTP/stdio and the client add. Finally
the throughput of 16 concurrent MCP sessions. Run from the repo root:

    python3 -m benchmarks.platform_roundtrip [--world DIR] [--calls 300] [--sessions 16]

Without ``--world`` it builds world 930 at scale 1 into a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import duckdb
import httpx
import httpx2
from benchmarks.asgi_driver import Lifespan
from benchmarks.asgi_driver import call_tool as asgi_call_tool
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from dabench.platform.admin.audit import AuditQuery, AuditStore
from dabench.platform.admin.auth import DEV_AUTH
from dabench.platform.app import build_http_app
from dabench.platform.profile import load_profile
from dabench.platform.service import PlatformService
from dabench.platform.storage import Database
from dabench.platform.warehouse import read_only_config
from dabench.platform.world_content import load_world_content
from dabench.targets.mcp_lean import LeanMcpConnection

SQL = "SELECT 42 AS answer"
PROTOCOL = "2026-07-28"
KEY = "dev-teacher-key"
ADMIN_KEY = "dev-admin-key"
PACE_MS = 5.0
"""Idle before each call in the "paced" in-process rows."""
TARGET_MS = 3.0
"""Issue 3's target: MCP overhead over the direct query at p50."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stats(latencies: list[float]) -> tuple[float, float]:
    ordered = sorted(latencies)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _time(fn: Callable[[], object], calls: int, pace_ms: float = 0.0) -> list[float]:
    for _ in range(20):
        fn()
    out = []
    for _ in range(calls):
        if pace_ms:
            time.sleep(pace_ms / 1000.0)
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


async def _atime(fn: Callable[[], Awaitable[object]], calls: int) -> list[float]:
    for _ in range(20):
        await fn()
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


Timed = tuple[list[float], str]
"""Latencies (ms) of the timed calls and the platform session they ran in."""


async def _session_calls(client: Client, calls: int) -> Timed:
    info = await client.call_tool("platform_info", {})
    sid = json.loads(info.content[0].text)["session_id"]  # type: ignore[union-attr]
    args = {"session_id": sid, "sql": SQL}

    async def one() -> None:
        result = await client.call_tool("sql_query", args)
        assert not result.is_error, result.content

    return await _atime(one, calls), sid


def _http_client(url: str) -> tuple[httpx2.AsyncClient, Client]:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {KEY}"}, timeout=httpx2.Timeout(60.0)
    )
    return http, Client(streamable_http_client(url, http_client=http))


async def _http(url: str, calls: int) -> Timed:
    http, client = _http_client(url)
    async with http, client:
        return await _session_calls(client, calls)


async def _lean(url: str, calls: int) -> Timed:
    """The harness's own stateless MCP client (:class:`LeanMcpConnection`)."""
    conn = LeanMcpConnection(url, {"Authorization": f"Bearer {KEY}"})
    await conn.open()
    try:
        sid = json.loads((await conn.call("platform_info", {})).text)["session_id"]
        args = {"session_id": sid, "sql": SQL}

        async def one() -> None:
            outcome = await conn.call("sql_query", args)
            assert not outcome.is_error, outcome.text

        return await _atime(one, calls), sid
    finally:
        await conn.close()


def _tool_ms_http(base: str, sid: str) -> list[float]:
    """Audited ``duration_ms`` of the session's ``sql_query`` calls, oldest first."""
    resp = httpx.get(
        base + "/api/v1/admin/audit/events",
        params={"session_id": sid, "tool_name": "sql_query", "limit": 10000},
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
        timeout=60,
    )
    resp.raise_for_status()
    return [float(e["duration_ms"]) for e in resp.json()["events"]]


def _tool_ms_sqlite(state: Path, sid: str) -> list[float]:
    """The same from a stopped server's audit file (the stdio run)."""
    store = AuditStore(Database(sqlite_path=state / "audit.sqlite"))
    page = store.events(AuditQuery(session_id=sid, tool_name="sql_query", limit=10000))
    store.db.close()
    return [e.duration_ms for e in page.events]


def _transport(latencies: list[float], tool_ms: list[float]) -> list[float]:
    """Per call: latency minus the audited tool time (the timed calls are the last ones)."""
    audited = tool_ms[-len(latencies) :]
    assert len(audited) == len(latencies), (len(audited), len(latencies))
    return [lat - tool for lat, tool in zip(latencies, audited, strict=True)]


def _raw_jsonrpc(url: str, calls: int) -> Timed:
    """The same tools/call as the SDK sends it, posted by a bare keep-alive HTTP client.

    Separates the server's share of the overhead from the MCP client SDK's.
    """
    meta = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {
        "Authorization": f"Bearer {KEY}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
        "MCP-Method": "tools/call",
    }
    with httpx.Client(headers=headers, timeout=60) as http:

        def post(name: str, arguments: dict[str, str]) -> dict[str, Any]:
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments, "_meta": meta},
            }
            resp = http.post(url, json=body, headers={"MCP-Name": name})
            resp.raise_for_status()
            result: dict[str, Any] = resp.json()["result"]
            assert not result["isError"], result
            return result

        sid = json.loads(post("platform_info", {})["content"][0]["text"])["session_id"]
        return _time(lambda: post("sql_query", {"session_id": sid, "sql": SQL}), calls), sid


def _sdk_floor_app() -> Any:
    """A bare MCP SDK app (the platform's transport settings, no platform logic).

    Its ``sql_query`` answers a constant: the latency it shows is the SDK (+ uvicorn) floor.
    """
    import contextlib

    import mcp_types as types
    from mcp.server import Server
    from mcp.server.streamable_http_manager import (
        StreamableHTTPASGIApp,
        StreamableHTTPSessionManager,
    )
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    schema = {"type": "object"}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        names = ("platform_info", "sql_query")
        return types.ListToolsResult(tools=[types.Tool(name=n, input_schema=schema) for n in names])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        text = '{"session_id": "dps_floor", "rows": [[42]]}'
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    server: Server = Server(
        "floor", on_list_tools=list_tools, on_call_tool=call_tool,
        get_tool_input_schema=lambda name: schema,
    )  # fmt: skip
    server.middleware = []
    manager = StreamableHTTPSessionManager(app=server, json_response=True)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        async with manager.run():
            yield

    async def health(request: Any) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    routes = [Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)), Route("/healthz", health)]
    return Starlette(routes=routes, lifespan=lifespan)


def _serve_sdk_floor(port: int) -> None:
    """Serve :func:`_sdk_floor_app` with uvicorn on ``port``."""
    import uvicorn

    uvicorn.run(_sdk_floor_app(), host="127.0.0.1", port=port, log_level="warning")


async def _asgi(app: Any, key: str, calls: int, sql_session: bool) -> tuple[list[float], float]:
    """Latencies of ``sql_query`` posted to ``app`` in-process, and CPU ms per call."""
    async with Lifespan(app):
        args: dict[str, Any] = {"sql": SQL}
        if sql_session:
            info = await asgi_call_tool(app, "platform_info", {}, key)
            args["session_id"] = json.loads(info["content"][0]["text"])["session_id"]

        async def one() -> None:
            result = await asgi_call_tool(app, "sql_query", args, key)
            assert not result.get("isError"), result

        cpu0 = time.process_time()
        latencies = await _atime(one, calls)
        return latencies, (time.process_time() - cpu0) * 1000.0 / (calls + 20)


def _spawn(argv: list[str], base: str) -> subprocess.Popen[bytes]:
    """Start a server process and wait for its ``/healthz``."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise SystemExit(f"server did not start: {argv}")
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)


async def _stdio(world: Path, state: Path, calls: int) -> Timed:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m", "dabench.cli", "platform", "serve", "--world", str(world),
            "--profile", "a0", "--transport", "stdio", "--state-dir", str(state),
        ],
        env={**os.environ, "DABENCH_API_KEY": KEY},
    )  # fmt: skip
    async with Client(params) as client:
        return await _session_calls(client, calls)


async def _throughput(url: str, sessions: int, calls: int) -> tuple[int, float, list[float]]:
    async def worker() -> list[float]:
        http, client = _http_client(url)
        async with http, client:
            info = await client.call_tool("platform_info", {})
            sid = json.loads(info.content[0].text)["session_id"]  # type: ignore[union-attr]
            await barrier.wait()
            out = []
            for _ in range(calls):
                t0 = time.perf_counter()
                result = await client.call_tool("sql_query", {"session_id": sid, "sql": SQL})
                assert not result.is_error
                out.append((time.perf_counter() - t0) * 1000.0)
            return out

    barrier = asyncio.Barrier(sessions + 1)
    tasks = [asyncio.create_task(worker()) for _ in range(sessions)]
    await barrier.wait()
    started = time.perf_counter()
    results = await asyncio.gather(*tasks)
    wall = time.perf_counter() - started
    latencies = [x for r in results for x in r]
    return len(latencies), wall, latencies


def main() -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=Path, default=None)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--session-calls", type=int, default=50)
    parser.add_argument("--sdk-floor", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--quick", action="store_true", help="seconds: 10 calls, 2 sessions x 5 calls"
    )
    opts = parser.parse_args()
    if opts.quick:
        opts.calls, opts.sessions, opts.session_calls = 10, 2, 5
    if opts.sdk_floor is not None:
        _serve_sdk_floor(opts.sdk_floor)
        return
    tmp = Path(tempfile.mkdtemp(prefix="dabench-bench-"))
    world = opts.world
    if world is None:
        from dabench.world import build_world

        world = tmp / "w930"
        print("building world 930 (scale 1)...", flush=True)
        build_world(930, 1, world)
    content = load_world_content(world)

    con = duckdb.connect(str(content.warehouse_path), read_only=True, config=read_only_config())

    def direct() -> None:
        cur = con.cursor()
        cur.execute(SQL).fetchmany(1001)
        cur.close()

    direct_ms = _time(direct, opts.calls)
    direct_paced_ms = _time(direct, opts.calls, PACE_MS)
    service = PlatformService(content, load_profile("a0"), DEV_AUTH, tmp / "inproc")
    identity = DEV_AUTH.identities[0]
    sid = json.loads(service.call(identity, "platform_info", {}).text)["session_id"]
    args = {"session_id": sid, "sql": SQL}
    service_ms = _time(lambda: service.call(identity, "sql_query", args), opts.calls)
    service_paced_ms = _time(lambda: service.call(identity, "sql_query", args), opts.calls, PACE_MS)
    service.close()
    floor_app_ms, floor_app_cpu = asyncio.run(_asgi(_sdk_floor_app(), KEY, opts.calls, False))
    asgi_service = PlatformService(content, load_profile("a0"), DEV_AUTH, tmp / "asgi")
    platform_app_ms, platform_app_cpu = asyncio.run(
        _asgi(build_http_app(asgi_service), KEY, opts.calls, True)
    )

    port = _free_port()
    floor_base = f"http://127.0.0.1:{port}"
    floor = _spawn(
        [sys.executable, "-m", "benchmarks.platform_roundtrip", "--sdk-floor", str(port)],
        floor_base,
    )
    try:
        floor_ms, _ = _raw_jsonrpc(floor_base + "/mcp", opts.calls)
    finally:
        _stop(floor)

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    url = base + "/mcp"
    argv = [
        sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world),
        "--profile", "a0", "--port", str(port), "--state-dir", str(tmp / "http"),
    ]  # fmt: skip
    proc = _spawn(argv, base)
    runs: dict[str, tuple[list[float], list[float] | None]] = {}
    cpu: dict[str, tuple[float, float]] = {}
    try:
        clients: list[tuple[str, Callable[[], Timed]]] = [
            ("platform, JSON-RPC POST", lambda: _raw_jsonrpc(url, opts.calls)),
            ("dabench lean client, HTTP", lambda: asyncio.run(_lean(url, opts.calls))),
            ("official client, HTTP", lambda: asyncio.run(_http(url, opts.calls))),
        ]
        for name, run in clients:
            server_cpu0, client_cpu0 = _process_cpu_s(proc.pid), time.process_time()
            latencies, run_sid = run()
            per_call = 1000.0 / (opts.calls + 21)
            cpu[name] = (
                (time.process_time() - client_cpu0) * per_call,
                (_process_cpu_s(proc.pid) - server_cpu0) * per_call,
            )
            runs[name] = (latencies, _transport(latencies, _tool_ms_http(base, run_sid)))
        n, wall, conc_ms = asyncio.run(_throughput(url, opts.sessions, opts.session_calls))
    finally:
        _stop(proc)
    stdio_ms, stdio_sid = asyncio.run(_stdio(world, tmp / "stdio", opts.calls))
    runs["official client, stdio"] = (
        stdio_ms,
        _transport(stdio_ms, _tool_ms_sqlite(tmp / "stdio", stdio_sid)),
    )

    d50, paced50 = _stats(direct_ms)[0], _stats(direct_paced_ms)[0]
    print(f"\nsql_query {SQL!r}, {opts.calls} sequential calls after 20 warm-up calls (ms)")
    print(
        f"{'path':<36}{'p50':>8}{'p95':>8}{'-direct':>9}{'-paced':>9}"
        f"{'transport p50':>15}{'p95':>8}"
    )
    rows: list[tuple[str, list[float], list[float] | None]] = [
        ("duckdb in-process (the limit)", direct_ms, None),
        (f"duckdb in-process, {PACE_MS:g} ms idle first", direct_paced_ms, None),
        ("PlatformService.call (no MCP)", service_ms, None),
        (f"PlatformService.call, {PACE_MS:g} ms idle", service_paced_ms, None),
        ("bare SDK app, in-process ASGI", floor_app_ms, None),
        ("platform app, in-process ASGI", platform_app_ms, None),
        ("bare SDK server, JSON-RPC POST", floor_ms, None),
    ]
    rows += [(name, lat, transport) for name, (lat, transport) in runs.items()]
    for name, lat, transport in rows:
        p50, p95 = _stats(lat)
        line = f"{name:<36}{p50:>8.2f}{p95:>8.2f}{p50 - d50:>9.2f}{p50 - paced50:>9.2f}"
        if transport is not None:
            t50, t95 = _stats(transport)
            line += f"{t50:>15.2f}{t95:>8.2f}"
        print(line)
    print(
        "-direct / -paced: p50 minus the in-process query's p50 back to back / after idle. "
        "transport: latency minus the call's audited tool time."
    )
    print(
        f"CPU per call, in-process ASGI (app + SDK, no socket or client): bare SDK app "
        f"{floor_app_cpu:.2f} ms, platform app {platform_app_cpu:.2f} ms"
    )
    for name, (client_ms, server_ms) in cpu.items():
        print(f"CPU per call, {name}: client {client_ms:.2f} ms, server {server_ms:.2f} ms")
    print(f"\ntarget: MCP overhead over the direct query < {TARGET_MS:g} ms at p50")
    for name, (lat, _) in runs.items():
        over = _stats(lat)[0] - d50
        verdict = "met" if over < TARGET_MS else "NOT met"
        print(f"  {name:<34} +{over:.2f} ms over direct (back to back): {verdict}")
    c50, c95 = _stats(conc_ms)
    print(
        f"\nthroughput: {opts.sessions} concurrent HTTP sessions x {opts.session_calls} calls = "
        f"{n} calls in {wall:.2f} s -> {n / wall:.0f} calls/s (per-call p50 {c50:.2f} ms, "
        f"p95 {c95:.2f} ms)"
    )
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
