"""The built-in provider kinds: anthropic, the OpenAI-compatible family and fake.

The SDK adapters are imported when a provider of their kind is made, so that importing
``dabench.providers`` (e.g. for the fake provider) does not pay for loading both SDKs.
"""

from __future__ import annotations

from dataclasses import dataclass

from dabench.errors import UserInputError
from dabench.providers.base import Provider
from dabench.providers.fake import FakeProvider, parse_fake_spec
from dabench.providers.registry import (
    ProviderSettings,
    api_key_from,
    register_provider,
    reject_unknown,
    require_api_key,
    require_model,
)


@dataclass(frozen=True)
class OpenAICompatKind:
    """Defaults of one OpenAI-compatible kind."""

    base_url: str | None
    """Default base URL (``None``: the SDK default, or required when ``needs_base_url``)."""
    key_env: str | None
    key_required: bool
    max_tokens_field: str = "max_tokens"
    needs_base_url: bool = False
    extra_body: tuple[tuple[str, object], ...] = ()


OPENAI_COMPAT_KINDS: dict[str, OpenAICompatKind] = {
    "openai": OpenAICompatKind(None, "OPENAI_API_KEY", True, "max_completion_tokens"),
    "openrouter": OpenAICompatKind(
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        True,
        extra_body=(("usage", {"include": True}),),
    ),
    "vllm": OpenAICompatKind("http://localhost:8000/v1", "VLLM_API_KEY", False),
    "ollama": OpenAICompatKind("http://localhost:11434/v1", None, False),
    "llamacpp": OpenAICompatKind("http://localhost:8080/v1", "LLAMACPP_API_KEY", False),
    "openai-compat": OpenAICompatKind(None, "OPENAI_COMPAT_API_KEY", False, needs_base_url=True),
}
"""Kind -> defaults. Local servers accept any key; ``"none"`` is sent when there is none."""

_OPENAI_EXTRAS = {"send_temperature", "max_tokens_field", "extra_body"}
_ANTHROPIC_EXTRAS = {"cache", "cache_conversation", "send_temperature"}


def _anthropic(kind: str, model: str, settings: ProviderSettings) -> Provider:
    from dabench.providers.anthropic import AnthropicProvider  # the SDK is slow to import

    spec = f"{kind}:{model}"
    extras = reject_unknown(settings, _ANTHROPIC_EXTRAS, spec=spec)
    return AnthropicProvider(
        require_model(kind, model),
        api_key=require_api_key(settings, "ANTHROPIC_API_KEY", spec=spec),
        base_url=settings.base_url,
        timeout=settings.timeout,
        prices=settings.prices,
        **extras,
    )


def _openai_compat(kind: str, model: str, settings: ProviderSettings) -> Provider:
    from dabench.providers.openai_compat import OpenAICompatProvider  # the SDK is slow to import

    spec = f"{kind}:{model}"
    defaults = OPENAI_COMPAT_KINDS[kind]
    extras = reject_unknown(settings, _OPENAI_EXTRAS, spec=spec)
    base_url = settings.base_url or defaults.base_url
    if defaults.needs_base_url and not base_url:
        raise UserInputError(f"provider {spec!r}: the {kind} kind needs a base_url setting")
    if defaults.key_required and defaults.key_env:
        api_key = require_api_key(settings, defaults.key_env, spec=spec)
    else:
        api_key = api_key_from(settings, defaults.key_env) or "none"
    extra_body = {**dict(defaults.extra_body), **extras.pop("extra_body", {})}
    return OpenAICompatProvider(
        kind,
        require_model(kind, model),
        base_url=base_url,
        api_key=api_key,
        timeout=settings.timeout,
        prices=settings.prices,
        max_tokens_field=extras.pop("max_tokens_field", defaults.max_tokens_field),
        extra_body=extra_body,
        **extras,
    )


def _fake(kind: str, model: str, settings: ProviderSettings) -> Provider:
    options = parse_fake_spec(model, **settings.extras())
    return FakeProvider(options, model=model or "scripted")


def register_builtin_kinds() -> None:
    """Register anthropic, every OpenAI-compatible kind and fake (idempotent)."""
    register_provider("anthropic", _anthropic, replace=True)
    for kind in OPENAI_COMPAT_KINDS:
        register_provider(kind, _openai_compat, replace=True)
    register_provider("fake", _fake, replace=True)
