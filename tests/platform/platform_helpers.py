"""Helpers for the platform tests: start a real platform process, talk MCP to it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

KEYS = {
    "teacher": "test-key-teacher-0001",
    "learner": "test-key-learner-0002",
    "reviewer": "test-key-reviewer-0003",
}
ADMIN_KEY = "test-admin-key-0004"


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RunningPlatform:
    """A platform process started for the tests."""

    base_url: str
    process: subprocess.Popen[bytes]
    state_dir: Path
    log: Path

    def admin_get(self, path: str, key: str | None = ADMIN_KEY, **params: Any) -> httpx.Response:
        """GET an admin path (``/api/v1/admin`` prefix added)."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.get(
            f"{self.base_url}/api/v1/admin{path}", params=params, headers=headers, timeout=30
        )

    def audit(self, **params: Any) -> list[dict[str, Any]]:
        """Audit events matching ``params``."""
        resp = self.admin_get("/audit/events", limit=10000, **params)
        assert resp.status_code == 200, resp.text
        return list(resp.json()["events"])


def launch_platform(
    world_dir: Path, profile: str, auth_file: Path, state_dir: Path, extra: list[str] | None = None
) -> RunningPlatform:
    """Start ``dabench platform serve`` on a free port without waiting for it."""
    port = free_port()
    state_dir.mkdir(parents=True, exist_ok=True)
    log = state_dir / "server.log"
    argv = [
        sys.executable, "-m", "dabench.cli", "platform", "serve",
        "--world", str(world_dir), "--profile", profile, "--port", str(port),
        "--auth", str(auth_file), "--state-dir", str(state_dir), *(extra or []),
    ]  # fmt: skip
    with log.open("wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT)
    return RunningPlatform(f"http://127.0.0.1:{port}", proc, state_dir, log)


def wait_healthy(platform: RunningPlatform, timeout_s: float = 300.0) -> RunningPlatform:
    """Poll ``/healthz`` until it answers 200 (or fail with the server log)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if platform.process.poll() is not None:
            raise RuntimeError(f"platform exited: {platform.log.read_text()}")
        try:
            if httpx.get(platform.base_url + "/healthz", timeout=1).status_code == 200:
                return platform
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    platform.process.kill()
    raise RuntimeError(f"platform did not become healthy: {platform.log.read_text()}")


def start_platform(
    world_dir: Path, profile: str, auth_file: Path, state_dir: Path, extra: list[str] | None = None
) -> RunningPlatform:
    """Start ``dabench platform serve`` and wait until it is healthy."""
    return wait_healthy(launch_platform(world_dir, profile, auth_file, state_dir, extra))


def stop_platforms(platforms: list[RunningPlatform]) -> list[int]:
    """SIGINT every process (graceful shutdown), then wait for all; returns exit codes."""
    for platform in platforms:
        if platform.process.poll() is None:
            platform.process.send_signal(signal.SIGINT)
    codes = []
    for platform in platforms:
        try:
            codes.append(platform.process.wait(timeout=20))
        except subprocess.TimeoutExpired:
            platform.process.kill()
            codes.append(platform.process.wait())
    return codes


def stop_platform(platform: RunningPlatform) -> int:
    """Stop one platform process gracefully; returns its exit code."""
    return stop_platforms([platform])[0]


TIGHT_PROFILE = {
    "name": "tight",
    "description": "Test profile: no gate, short timeout, small row cap.",
    "tools": ["platform_info", "sql_query", "describe_table", "list_tables"],
    "sql": {"row_limit_default": 5, "row_limit_max": 20, "timeout_s": 0.5, "max_sql_chars": 2000},
}


@asynccontextmanager
async def mcp_client(
    platform: RunningPlatform, user: str = "teacher", headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    """An official MCP client over streamable HTTP, authenticated as ``user``."""
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {KEYS[user]}", **(headers or {})},
        timeout=httpx2.Timeout(30.0),
    )
    async with (
        http,
        Client(streamable_http_client(platform.base_url + "/mcp", http_client=http)) as c,
    ):
        yield c


async def call(client: Client, tool: str, args: dict[str, Any] | None = None) -> tuple[bool, Any]:
    """Call a tool; returns ``(is_error, parsed JSON body)``."""
    result = await client.call_tool(tool, args or {})
    text = result.content[0].text  # type: ignore[union-attr]
    return bool(result.is_error), json.loads(text)


async def open_session(client: Client) -> str:
    """``platform_info`` -> the session handle."""
    is_error, body = await call(client, "platform_info")
    assert not is_error, body
    sid = body["session_id"]
    assert isinstance(sid, str) and sid.startswith("dps_")
    return sid


def env_without_key() -> dict[str, str]:
    """The environment minus DABENCH_API_KEY."""
    return {k: v for k, v in os.environ.items() if k != "DABENCH_API_KEY"}


def serve_without_module(
    module: str, profile: dict[str, Any], world_dir: Path, auth_file: Path, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """Run ``dabench platform serve`` with ``profile`` while ``module`` cannot be imported
    (as if an optional extra were not installed); returns the finished process."""
    import yaml

    path = tmp_path / f"{profile['name']}.yaml"
    path.write_text(yaml.safe_dump(profile))
    code = (
        f"import sys; sys.modules[{module!r}] = None; from dabench.cli import main; "
        "sys.argv = ['dabench'] + sys.argv[1:]; main()"
    )
    argv = [
        sys.executable, "-c", code, "platform", "serve", "--world", str(world_dir),
        "--profile", str(path), "--auth", str(auth_file), "--port", "0",
        "--state-dir", str(tmp_path / "state"),
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def raw_tool_call(
    platform: RunningPlatform, user: str, name: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    """A ``tools/call`` as one raw MCP 2026-07-28 POST. The body is ``json.dumps`` output, so
    arguments may hold what no SDK client would send (lone surrogates travel as ``\\udXXX``,
    NaN as ``NaN``). Returns the JSON-RPC response."""
    protocol = "2026-07-28"
    meta = {
        "io.modelcontextprotocol/protocolVersion": protocol,
        "io.modelcontextprotocol/clientInfo": {"name": "dabench-tests", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": name, "arguments": arguments, "_meta": meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    headers = {
        "Authorization": f"Bearer {KEYS[user]}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": protocol,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    resp = httpx.post(platform.base_url + "/mcp", content=body, headers=headers, timeout=30)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def guard_mismatches(corpus: list[dict[str, Any]], scope: Any) -> list[tuple[str, str]]:
    """Hostile-SQL corpus rows the SQL guard does not refuse with their expected code:
    ``(sql, "ACCEPTED")`` or ``(sql, code it gave)``."""
    from dabench.platform.errors import ToolError
    from dabench.platform.sqlguard import check_sql

    wrong = []
    for row in corpus:
        try:
            check_sql(row["sql"], 20000, scope)
            wrong.append((row["sql"], "ACCEPTED"))
        except ToolError as exc:
            if exc.code != row["code"]:
                wrong.append((row["sql"], exc.code))
    return wrong
