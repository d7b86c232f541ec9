"""run_claude_cli against a fake ``claude`` executable that emits documented stream-json."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from dabench.errors import UserInputError
from dabench.providers import ProviderError, run_claude_cli
from dabench.providers.claude_cli import build_command, mcp_tool_name, parse_stream_json

MCP_CONFIG = {"mcpServers": {"dabench": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put the fake CLI first on PATH as ``claude``; returns the file it records into."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    target = bin_dir / "claude"
    script = (Path(__file__).parent / "fake_claude.py").read_text(encoding="utf-8")
    target.write_text(f"#!{sys.executable}\n{script}", encoding="utf-8")
    target.chmod(target.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    record = tmp_path / "record.json"
    monkeypatch.setenv("FAKE_CLAUDE_RECORD", str(record))
    return record


async def run(**kwargs: object):  # type: ignore[no-untyped-def]
    return await run_claude_cli(
        "How much revenue?",
        mcp_config=MCP_CONFIG,
        model="claude-sonnet-4-6",
        allowed_tools=[mcp_tool_name("dabench", "sql_query")],
        max_turns=8,
        system_prompt="Answer with a number.",
        timeout=20,
        **kwargs,  # type: ignore[arg-type]
    )


async def test_success_run(fake_claude: Path) -> None:
    result = await run()
    assert result.text == "The answer is 42."
    assert result.subtype == "success" and not result.is_error
    assert result.session_id == "sess-1"
    assert result.model == "claude-sonnet-4-6"
    assert result.num_turns == 2
    assert result.duration_ms == 3456
    assert result.exit_code == 0
    assert result.mcp_servers == {"dabench": "connected"}
    assert [(c.name, c.arguments, c.result, c.is_error) for c in result.tool_calls] == [
        ("mcp__dabench__sql_query", {"sql": "SELECT 42"}, "42", False)
    ]
    assert result.usage.input == 120 and result.usage.output == 30
    assert result.usage.cache_write == 1000 and result.usage.cache_read == 2000
    assert (result.cost_usd, result.cost_source) == (0.0234, "provider")

    record = json.loads(fake_claude.read_text())
    argv = record["argv"]
    assert argv[:5] == ["-p", "--output-format", "stream-json", "--verbose", "--mcp-config"]
    assert "--strict-mcp-config" in argv
    assert argv[argv.index("--model") + 1] == "claude-sonnet-4-6"
    assert argv[argv.index("--allowedTools") + 1] == "mcp__dabench__sql_query"
    assert argv[argv.index("--max-turns") + 1] == "8"
    assert argv[argv.index("--system-prompt") + 1] == "Answer with a number."
    assert record["prompt"] == "How much revenue?"
    assert record["mcp_config"] == MCP_CONFIG


async def test_append_system_prompt(fake_claude: Path) -> None:
    await run(append_system_prompt=True)
    argv = json.loads(fake_claude.read_text())["argv"]
    assert "--append-system-prompt" in argv and "--system-prompt" not in argv


async def test_price_table_when_no_reported_cost(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "no_cost")
    result = await run()
    assert result.cost_source == "price_table"
    # claude-sonnet-4-6: 120*3 + 30*15 + 2000*0.30 + 1000*3.75 per MTok
    assert result.cost_usd == pytest.approx((360 + 450 + 600 + 3750) / 1e6)


async def test_max_turns_is_an_agent_outcome(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "max_turns")
    result = await run()
    assert result.is_error and result.subtype == "error_max_turns"
    assert result.exit_code == 1
    assert result.text == "Let me query."  # no result text: the last assistant text
    assert result.tool_calls[0].has_result


@pytest.mark.parametrize(
    ("mode", "retryable", "fragment"),
    [
        ("api_error", True, "529 Overloaded"),
        ("execution_error", False, "error_during_execution"),
        ("crash", False, "Invalid API key"),
        ("crash-overloaded", True, "overloaded_error"),
    ],
)
async def test_errors_become_provider_errors(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch, mode: str, retryable: bool, fragment: str
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", mode)
    with pytest.raises(ProviderError) as info:
        await run()
    assert info.value.retryable is retryable
    assert fragment in str(info.value)


async def test_timeout_kills_the_cli(fake_claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "hang")
    with pytest.raises(ProviderError) as info:
        await run_claude_cli("q", mcp_config=MCP_CONFIG, timeout=1.0)
    assert info.value.retryable
    assert "killed" in str(info.value)


async def test_not_installed_is_a_user_error() -> None:
    assert shutil.which("claude-not-installed-here") is None
    with pytest.raises(UserInputError, match="not on PATH"):
        await run_claude_cli("q", mcp_config=MCP_CONFIG, executable="claude-not-installed-here")


def test_build_command_minimal() -> None:
    argv = build_command("claude", mcp_config_path=Path("/tmp/m.json"))
    assert argv == [
        "claude",
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--mcp-config",
        "/tmp/m.json",
        "--strict-mcp-config",
    ]


def test_parse_tolerates_missing_result_and_string_tool_content() -> None:
    lines = [
        json.dumps({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "x", "input": {"a": 1}}]}}),
        json.dumps({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "plain", "is_error": True}]}}),
        "",
        "[1, 2]",
    ]  # fmt: skip
    result, final = parse_stream_json(lines)
    assert final is None
    assert result.events == 2
    assert result.tool_calls[0].result == "plain" and result.tool_calls[0].is_error


async def test_unconnected_mcp_server_is_a_harness_error(
    fake_claude: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "mcp_failed")
    with pytest.raises(ProviderError) as info:
        await run()
    assert info.value.retryable
    assert '"dabench": "failed"' in str(info.value)
