"""``dabench providers`` commands."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dabench.errors import UnreachableError, UserInputError
from dabench.providers.commands import app

from .servers import Reply, WireServer, closed_port_url, openai_completion

runner = CliRunner()


def test_kinds_lists_every_kind() -> None:
    result = runner.invoke(app, ["kinds"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for kind in ("anthropic", "openrouter", "ollama", "llamacpp", "vllm", "fake"):
        assert kind in result.output
    assert "http://localhost:11434/v1" in result.output


def test_prices_shows_the_date_and_overrides(tmp_path) -> None:  # type: ignore[no-untyped-def]
    overrides = tmp_path / "p.yaml"
    overrides.write_text("ollama:\n  qwen: {input: 0, output: 0}\n")
    result = runner.invoke(app, ["prices", "--overrides", str(overrides)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "as of 20" in result.output
    assert "claude-haiku-4-5" in result.output
    assert "qwen" in result.output


def test_ping_fake() -> None:
    result = runner.invoke(app, ["ping", "fake:answer=pong"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "'pong'" in result.output


def test_ping_a_local_server(wire: WireServer) -> None:
    wire.enqueue(Reply(body=openai_completion("OK", model="local-model", cost=0.5)))
    result = runner.invoke(
        app,
        ["ping", "openai-compat:local-model", "--base-url", f"{wire.url}/v1", "--timeout", "5"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "'OK'" in result.output
    assert "$0.500000 (provider)" in result.output
    assert wire.requests[0].body["messages"] == [
        {"role": "user", "content": "Reply with the single word OK."}
    ]


def test_ping_unknown_kind_is_a_user_error() -> None:
    result = runner.invoke(app, ["ping", "gemini:pro"])
    assert isinstance(result.exception, UserInputError)
    with pytest.raises(UserInputError, match="unknown kind"):
        raise result.exception


def test_ping_an_unreachable_server_is_one_error_with_the_url() -> None:
    url = f"{closed_port_url()}/v1"
    result = runner.invoke(app, ["ping", "ollama:llama3", "--base-url", url, "--timeout", "3"])
    assert isinstance(result.exception, UnreachableError), result.output
    assert result.exception.exit_code == 3
    assert f"ollama:llama3 at {url}: ollama: connection error" in str(result.exception)
