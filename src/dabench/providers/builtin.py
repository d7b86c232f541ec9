"""The built-in provider kinds: anthropic, the OpenAI-compatible family and fake.

The SDK adapters are imported when a provider of their kind is made, so that importing
``dabench.providers`` (e.g. for the fake provider) does not pay for loading both SDKs.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

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

KEYLESS_KINDS = tuple(k for k, d in OPENAI_COMPAT_KINDS.items() if not d.key_required)
"""The OpenAI-compatible kinds that need no API key (local servers)."""

SDK_DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
"""Where the vendor SDKs send requests when no base URL is set."""


def is_local_url(url: str | None) -> bool:
    """Whether ``url`` points at this machine or a private network (loopback, RFC 1918,
    link-local, ``localhost``, ``*.local``): a self-hosted server, which needs no API key."""
    if not url:
        return False
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith((".localhost", ".local")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def endpoint_url(kind: str, base_url: str | None) -> str:
    """The URL a provider of ``kind`` calls: ``base_url``, else the kind's default."""
    compat = OPENAI_COMPAT_KINDS.get(kind)
    default = compat.base_url if compat is not None else None
    return base_url or default or SDK_DEFAULT_URLS.get(kind, f"the {kind} default URL")


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
    if defaults.key_required and defaults.key_env and not is_local_url(base_url):
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
