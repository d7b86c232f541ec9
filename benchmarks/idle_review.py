"""Idle review: every HTTP client of the harness calls, idles 30 s, 120 s or 10 min, calls again.

Real durations, real servers at their default keep-alive (uvicorn's 5 s, so each idle is
6x, 24x and 120x the keep-alive): the reference platform (a0) reached by the lean MCP
client, the official MCP client (the generic ``mcp`` target), the audit read-back and the
admin API; and ``tests/harness/keepalive_server.py`` answering as Kibana (``GET
/api/status``), the OpenAI and the Anthropic APIs for the Kibana client and both provider
SDKs. The three idle lengths run side by side, each with its own clients. Prints, per
client and idle length, whether the call after the idle worked (and the error if not).

    python benchmarks/idle_review.py [--idle 30 120 600]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dabench.providers import make_provider
from dabench.providers.base import ChatMessage
from dabench.targets.base import TargetContext
from dabench.targets.kibana.client import KibanaClient
from dabench.targets.mcp import McpTarget, McpTargetConfig, SessionToolConfig
from dabench.targets.process import ServerProcess, free_port
from dabench.targets.reference import ReferenceTarget, ReferenceTargetConfig
from runner_throughput import default_world

ROOT = Path(__file__).resolve().parents[1]
Call = Callable[[], Awaitable[object]]


def start_wire_server(log: Path) -> tuple[ServerProcess, str]:
    """The uvicorn stand-in for Kibana and the model APIs, at uvicorn's default keep-alive."""
    port = free_port()
    path = os.pathsep.join([str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])
    argv = [sys.executable, "-m", "tests.harness.keepalive_server", str(port), "5"]
    proc = ServerProcess(argv, log, env={"PYTHONPATH": path})
    proc.start()
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(proc.log_tail())


async def clients(ref: ReferenceTarget, wire: str, work: Path) -> dict[str, Call]:
    """One fresh set of clients, each as a no-argument call."""
    session = await ref.open_session()
    generic = McpTarget(
        McpTargetConfig(
            url=ref.base_url + "/mcp",
            headers={"Authorization": f"Bearer {ref.keys['default']}"},
            session_tool=SessionToolConfig(name="platform_info"),
            session_argument="session_id",
        ),
        TargetContext(None, work),
    )
    await generic.start()
    generic_session = await generic.open_session()
    kibana = KibanaClient(wire, "key")
    openai = make_provider("openai:gpt-4.1", base_url=wire + "/v1", api_key="k")
    anthropic = make_provider("anthropic:claude-sonnet-4-6", base_url=wire, api_key="k")
    hi = [ChatMessage(role="user", content="hi")]

    async def lean() -> object:
        out = await session.call("sql_query", {"sql": "SELECT 1"})
        assert not out.is_error, out.text
        return out

    async def sdk() -> object:
        out = await generic_session.call("sql_query", {"sql": "SELECT 1"})
        assert not out.is_error, out.text
        return out

    def model(provider: object) -> Call:
        async def call() -> object:
            return await provider.complete(  # type: ignore[attr-defined]
                hi, system="s", tools=[], max_tokens=5, temperature=0.0
            )

        return call

    return {
        "reference: lean MCP client": lean,
        "mcp target: official MCP client": sdk,
        "reference: audit read-back": lambda: ref.read_audit([session.handle], 0),
        "reference: admin API (loopback)": lambda: ref.admin("GET", "/api/v1/admin/audit/events"),
        "kibana client": kibana.status,
        "openai provider": model(openai),
        "anthropic provider": model(anthropic),
    }


async def review(idles: list[float]) -> dict[tuple[str, float], str]:
    """Call, idle, call again, for each idle length side by side."""
    results: dict[tuple[str, float], str] = {}
    with tempfile.TemporaryDirectory(prefix="dabench-idle-") as tmp:
        work = Path(tmp)
        wire_proc, wire = start_wire_server(work / "wire.log")
        ref = ReferenceTarget(
            ReferenceTargetConfig(profile="a0"), TargetContext(default_world(), work / "ref")
        )
        await ref.start()
        try:

            async def one(idle: float) -> None:
                calls = await clients(ref, wire, work / f"mcp-{idle:g}")
                for call in calls.values():
                    await call()
                await asyncio.sleep(idle)
                for name, call in calls.items():
                    try:
                        await call()
                        results[(name, idle)] = "ok"
                    except Exception as exc:
                        results[(name, idle)] = f"FAILED: {exc!r}"[:120]

            await asyncio.gather(*(one(idle) for idle in idles))
        finally:
            await ref.stop()
            wire_proc.kill_now()
    return results


def main() -> None:
    """Run the review and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=float, nargs="+", default=[30.0, 120.0, 600.0])
    parser.add_argument(
        "--quick", action="store_true", help="seconds: one 1 s idle (inside the keep-alive)"
    )
    args = parser.parse_args()
    if args.quick:
        args.idle = [1.0]
    results = asyncio.run(review(args.idle))
    table = Table("client", *(f"idle {idle:g} s" for idle in args.idle))
    for name in dict.fromkeys(name for name, _ in results):
        table.add_row(name, *(results[(name, idle)] for idle in args.idle))
    console = Console(width=160)
    console.print("servers: reference platform and uvicorn stand-in, keep-alive 5 s")
    console.print(table)
    if any(value != "ok" for value in results.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
