"""make_provider: spec parsing, kinds, keys from the environment, clear errors."""

from __future__ import annotations

import pytest

from dabench.errors import UserInputError
from dabench.providers import (
    FakeProvider,
    Provider,
    make_provider,
    provider_kinds,
    register_provider,
    split_spec,
)
from dabench.providers.registry import ProviderSettings


def test_split_on_the_first_colon() -> None:
    assert split_spec("ollama:qwen2.5:7b") == ("ollama", "qwen2.5:7b")
    assert split_spec("openrouter:anthropic/claude-3.5") == ("openrouter", "anthropic/claude-3.5")
    assert split_spec("fake") == ("fake", "")
    with pytest.raises(UserInputError, match="expected KIND:MODEL"):
        split_spec(":gpt")


def test_builtin_kinds() -> None:
    assert {
        "anthropic",
        "openai",
        "openrouter",
        "vllm",
        "ollama",
        "llamacpp",
        "openai-compat",
        "fake",
    } <= set(provider_kinds())


def test_unknown_kind_lists_the_known_ones() -> None:
    with pytest.raises(UserInputError, match=r"unknown kind 'gemini'.*known kinds: anthropic"):
        make_provider("gemini:pro")
    with pytest.raises(UserInputError, match="agent kind"):
        make_provider("claude-cli:sonnet")


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for var, spec in [
        ("ANTHROPIC_API_KEY", "anthropic:claude-haiku-4-5"),
        ("OPENAI_API_KEY", "openai:gpt-4.1"),
        ("OPENROUTER_API_KEY", "openrouter:openai/gpt-4.1"),
    ]:
        monkeypatch.delenv(var, raising=False)
        with pytest.raises(UserInputError, match=var):
            make_provider(spec)


def test_keys_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-env")
    p = make_provider("openrouter:openai/gpt-4.1")
    assert p.name == "openrouter"
    assert p.model == "openai/gpt-4.1"
    assert p.client.api_key == "sk-or-env"  # type: ignore[attr-defined]
    assert str(p.client.base_url).startswith("https://openrouter.ai/api/v1")  # type: ignore[attr-defined]


def test_local_kinds_have_default_urls_and_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    assert str(make_provider("ollama:llama3").client.base_url).startswith(  # type: ignore[attr-defined]
        "http://localhost:11434/v1"
    )
    assert str(make_provider("llamacpp:any").client.base_url).startswith(  # type: ignore[attr-defined]
        "http://localhost:8080/v1"
    )
    assert str(make_provider("vllm:m").client.base_url).startswith("http://localhost:8000/v1")  # type: ignore[attr-defined]


def test_openai_compat_needs_a_base_url() -> None:
    with pytest.raises(UserInputError, match="needs a base_url"):
        make_provider("openai-compat:m")
    p = make_provider("openai-compat:m", base_url="http://127.0.0.1:9/v1")
    assert p.name == "openai-compat"


def test_missing_model_and_bad_settings() -> None:
    with pytest.raises(UserInputError, match="missing model"):
        make_provider("anthropic:", api_key="k")
    with pytest.raises(UserInputError, match="unknown setting 'tempurature'"):
        make_provider("openai:gpt-4.1", api_key="k", tempurature=0)
    with pytest.raises(UserInputError, match="setting timeout"):
        make_provider("openai:gpt-4.1", api_key="k", timeout=-1)


def test_register_a_new_kind() -> None:
    def factory(kind: str, model: str, settings: ProviderSettings) -> Provider:
        return FakeProvider(model=f"{kind}/{model}")

    register_provider("test-echo", factory)
    with pytest.raises(ValueError, match="already registered"):
        register_provider("test-echo", factory)
    made = make_provider("test-echo:m1")
    assert made.model == "test-echo/m1"
    assert "test-echo" in provider_kinds()
