"""The "Connect MCP clients" snippets of docs/platform.md, run as written: the MCP Inspector
CLI from npm (HTTP with the key header, and stdio with ``--``) lists the tools; the Claude
Desktop and Cursor JSON configs are launched as they stand with the official MCP client.

Inspector 2.x needs Node >= 22: the test installs ``node@22`` and a pinned Inspector into the
dabench cache once per session (time-bounded), and skips only when npm is missing locally
(CI fails instead)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from platform_helpers import RunningPlatform, free_port, stop_platform, wait_healthy
from tests.environment import skip_unless_ci

pytestmark = pytest.mark.slow

DOC = Path(__file__).parents[2] / "docs" / "platform.md"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
NPX_INSPECTOR = "npx @modelcontextprotocol/inspector"
WORLD_PLACEHOLDER = "/path/to/world"
DOC_PORT = "8765"
HOW = "send the platform's API key as: Authorization: Bearer <key>"


def section() -> str:
    """The "Connect MCP clients" section of the doc."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("### Connect MCP clients")
    end = text.index("\n## ", start)
    return text[start:end]


def blocks(lang: str) -> list[str]:
    """The fenced ``lang`` code blocks of the section."""
    return re.findall(rf"```{lang}\n(.*?)```", section(), flags=re.S)


def inspector_commands() -> dict[str, list[str]]:
    """The Inspector commands of the doc, by transport."""
    found = {}
    for block in blocks("sh"):
        argv = shlex.split(block.strip())
        assert " ".join(argv[:2]) == NPX_INSPECTOR, block
        found["stdio" if "--" in argv else "http"] = argv
    assert set(found) == {"http", "stdio"}
    return found


def client_configs() -> dict[str, dict[str, Any]]:
    """The Claude Desktop (``command``) and Cursor (``url``) server entries of the doc."""
    found = {}
    for block in blocks("json"):
        entry = json.loads(block)["mcpServers"]["dabench"]
        found["cursor" if "url" in entry else "claude"] = entry
    assert set(found) == {"claude", "cursor"}
    return found


@pytest.fixture(scope="session")
def inspector() -> tuple[list[str], str]:
    """``[node, inspector]`` and the Node 22 directory for PATH, installed with npm into the
    dabench cache once (both steps time-bounded)."""
    npm = shutil.which("npm")
    if npm is None:
        skip_unless_ci("npm is not installed: cannot install the MCP Inspector")
    assert npm is not None
    cache = Path(os.environ.get("DABENCH_CACHE", Path.home() / ".cache" / "dabench"))
    prefix = cache / "npm-inspector"
    node_dir = prefix / "node_modules" / "node" / "bin"
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"
    env = {**os.environ, "PATH": f"{node_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    steps = [("node@22", node_dir / "node"), (INSPECTOR, entry)]
    for package, marker in steps:
        if marker.exists():
            continue
        prefix.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), package],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,  # npm on Node 22 resolves the Inspector that needs it
        )
        if proc.returncode != 0 or not marker.exists():
            skip_unless_ci(f"npm could not install {package}: {proc.stderr[-800:]}")
    bin_rel = json.loads(entry.read_text())["bin"]["mcp-inspector"]
    return [str(node_dir / "node"), str(entry.parent / bin_rel)], str(node_dir)


@pytest.fixture(scope="module")
def dabench_on_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A directory holding a ``dabench`` executable that runs this checkout's CLI (the
    snippets name the ``dabench`` command)."""
    bindir = tmp_path_factory.mktemp("bin")
    shim = bindir / "dabench"
    src = Path(__file__).parents[2] / "src"
    shim.write_text(
        f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(src))} exec {shlex.quote(sys.executable)} "
        '-m dabench.cli "$@"\n'
    )
    shim.chmod(0o755)
    return str(bindir)


@pytest.fixture(scope="module")
def dev_platform(world_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``dabench platform serve --profile a2`` without ``--auth`` (the dev keys the doc
    uses), over HTTP; yields its port."""
    state = tmp_path_factory.mktemp("dev")
    port = free_port()
    argv = [
        sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world_dir),
        "--profile", "a2", "--port", str(port), "--state-dir", str(state),
    ]  # fmt: skip
    log = state / "server.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT)
    platform = wait_healthy(RunningPlatform(f"http://127.0.0.1:{port}", proc, state, log))
    try:
        yield str(port)
    finally:
        stop_platform(platform)


def concrete(argv: list[str], world: Path, port: str) -> list[str]:
    """The doc's arguments with the world placeholder and the port filled in."""
    return [
        a.replace(WORLD_PLACEHOLDER, str(world)).replace(f":{DOC_PORT}/", f":{port}/") for a in argv
    ]


def run_inspector(
    inspector: tuple[list[str], str], argv: list[str], path_dirs: list[str], **env: str
) -> subprocess.CompletedProcess[str]:
    """The doc's ``npx @modelcontextprotocol/inspector ...`` with the cached Inspector."""
    launcher, node_dir = inspector
    path = os.pathsep.join([*path_dirs, node_dir, os.environ.get("PATH", "")])
    assert argv[2] == "--cli", argv
    # the Inspector's own connect timeout (15 s) is a safety net here, not what is tested
    return subprocess.run(
        [*launcher, "--cli", "--connect-timeout", "300000", *argv[3:]],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": path, "MCP_INSPECTOR_SECRET_STORE": "memory", **env},
        stdin=subprocess.DEVNULL,
    )


def listed_tools(proc: subprocess.CompletedProcess[str]) -> set[str]:
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {t["name"] for t in json.loads(proc.stdout)["tools"]}


A2_TOOLS = {"platform_info", "sql_query", "describe_table", "list_tables", "search", "fetch"}


def test_inspector_over_http_with_the_key_header(
    inspector: tuple[list[str], str], dev_platform: str, world_dir: Path
) -> None:
    argv = concrete(inspector_commands()["http"], world_dir, dev_platform)
    assert listed_tools(run_inspector(inspector, argv, [])) == A2_TOOLS


def test_inspector_without_a_key_gets_the_explanation_not_an_oauth_dance(
    inspector: tuple[list[str], str], dev_platform: str, world_dir: Path
) -> None:
    argv = concrete(inspector_commands()["http"], world_dir, dev_platform)
    i = argv.index("--header")
    keyless = argv[:i] + argv[i + 2 :]
    stored_only = run_inspector(inspector, [*keyless, "--stored-auth-only"], [])
    said = stored_only.stdout + stored_only.stderr
    assert stored_only.returncode != 0 and "auth_required" in said and HOW in said, said
    # allowed to run OAuth: it stops at registration with the platform's explanation
    interactive = run_inspector(inspector, keyless, [], MCP_AUTO_OPEN_ENABLED="true")
    said = interactive.stdout + interactive.stderr
    assert interactive.returncode != 0 and "Dynamic Client Registration rejected" in said, said
    assert "no_authorization_server" in said and HOW in said


def test_inspector_over_stdio_with_the_separator(
    inspector: tuple[list[str], str], dabench_on_path: str, world_dir: Path
) -> None:
    argv = concrete(inspector_commands()["stdio"], world_dir, DOC_PORT)
    assert argv[argv.index("--") + 1 :][-2:] == ["--transport", "stdio"]
    assert listed_tools(run_inspector(inspector, argv, [dabench_on_path])) == A2_TOOLS


async def test_claude_desktop_config_launches_the_stdio_server(
    dabench_on_path: str, world_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = client_configs()["claude"]
    monkeypatch.setenv("PATH", f"{dabench_on_path}{os.pathsep}{os.environ['PATH']}")
    params = StdioServerParameters(
        command=entry["command"],
        args=concrete(entry["args"], world_dir, DOC_PORT),
        env=entry["env"],
    )
    async with Client(params) as client:
        tools = await client.list_tools()
        info = await client.call_tool("platform_info", {})
    assert {t.name for t in tools.tools} == A2_TOOLS
    assert not info.is_error and "dps_" in info.content[0].text  # type: ignore[union-attr]


async def test_cursor_config_connects_over_http(dev_platform: str, world_dir: Path) -> None:
    entry = client_configs()["cursor"]
    url = concrete([entry["url"]], world_dir, dev_platform)[0]
    async with (
        httpx2.AsyncClient(headers=entry["headers"]) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        tools = await client.list_tools()
    assert {t.name for t in tools.tools} == A2_TOOLS
