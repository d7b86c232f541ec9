"""Provider kinds and ``make_provider``: ``KIND:MODEL`` specs to configured adapters.

A factory receives the kind, the model (everything after the first colon, so
``ollama:qwen2.5:7b`` has model ``qwen2.5:7b``) and a validated :class:`ProviderSettings`.
New kinds are added with :func:`register_provider`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from dabench.errors import UserInputError
from dabench.fields import Seconds
from dabench.providers.base import Provider

ProviderFactory = Callable[[str, str, "ProviderSettings"], Provider]

_REGISTRY: dict[str, ProviderFactory] = {}
_builtins_loaded = False


def _kinds() -> dict[str, ProviderFactory]:
    """The registry, with the built-in kinds registered on first use (importing them here,
    not at package import, keeps ``dabench.providers`` free of an import circle)."""
    global _builtins_loaded
    if not _builtins_loaded:
        _builtins_loaded = True
        from dabench.providers.builtin import register_builtin_kinds

        register_builtin_kinds()
    return _REGISTRY


class ProviderSettings(BaseModel):
    """Settings common to every kind; kind-specific ones stay in ``extra``."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    base_url: str | None = None
    api_key: str | None = None
    """Defaults to the kind's environment variable (``ANTHROPIC_API_KEY``...)."""
    timeout: Seconds = 120.0
    """Seconds per request before a retryable timeout error."""
    prices: dict[str, dict[str, Any]] | str | Path | None = None
    """Price overrides: a mapping provider -> model -> prices, or a YAML file."""

    def extras(self) -> dict[str, Any]:
        """The kind-specific settings (everything not declared above)."""
        return dict(self.model_extra or {})


def register_provider(kind: str, factory: ProviderFactory, *, replace: bool = False) -> None:
    """Register ``factory`` for specs ``kind:MODEL``; refuses to shadow a kind silently."""
    kinds = _kinds()
    if kind in kinds and not replace:
        raise ValueError(f"provider kind {kind!r} is already registered")
    kinds[kind] = factory


def provider_kinds() -> list[str]:
    """The registered kinds, sorted."""
    return sorted(_kinds())


def split_spec(spec: str) -> tuple[str, str]:
    """``(kind, model)`` from ``KIND:MODEL``, split on the first colon; ``fake`` needs no model."""
    kind, _, model = spec.strip().partition(":")
    kind = kind.strip().lower()
    if not kind:
        raise UserInputError(f"provider spec {spec!r}: expected KIND:MODEL, e.g. openai:gpt-4.1")
    return kind, model.strip()


def make_provider(spec: str, **settings: Any) -> Provider:
    """A configured provider for ``spec`` (``KIND:MODEL``) and ``settings``.

    Common settings: ``base_url``, ``api_key``, ``timeout``, ``prices``; any other keyword is
    passed to the kind's factory, which rejects those it does not know.
    """
    kind, model = split_spec(spec)
    factory = _kinds().get(kind)
    if factory is None:
        hint = (
            " (the claude CLI runs its own tool loop: use it as an agent kind)"
            if kind in {"claude", "claude-cli", "claude_cli"}
            else ""
        )
        raise UserInputError(
            f"provider spec {spec!r}: unknown kind {kind!r}{hint}; "
            f"known kinds: {', '.join(provider_kinds())}"
        )
    try:
        validated = ProviderSettings.model_validate(settings)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise UserInputError(f"provider {spec!r}: setting {field}: {err['msg']}") from exc
    return factory(kind, model, validated)


def api_key_from(settings: ProviderSettings, env_var: str | None) -> str | None:
    """The explicit ``api_key`` setting, else ``$env_var``, else ``None``."""
    if settings.api_key:
        return settings.api_key
    if env_var:
        value = os.environ.get(env_var, "").strip()
        if value:
            return value
    return None


def require_api_key(settings: ProviderSettings, env_var: str, *, spec: str) -> str:
    """Like :func:`api_key_from` but a missing key is a :class:`UserInputError`."""
    key = api_key_from(settings, env_var)
    if key is None:
        raise UserInputError(
            f"provider {spec!r}: no API key: set {env_var} or pass the api_key setting"
        )
    return key


def reject_unknown(settings: ProviderSettings, allowed: set[str], *, spec: str) -> dict[str, Any]:
    """The kind-specific settings, or a :class:`UserInputError` naming an unknown one."""
    extras = settings.extras()
    unknown = sorted(set(extras) - allowed)
    if unknown:
        known = ", ".join(sorted({"base_url", "api_key", "timeout", "prices", *allowed}))
        raise UserInputError(f"provider {spec!r}: unknown setting {unknown[0]!r}; known: {known}")
    return extras


def require_model(kind: str, model: str) -> str:
    """``model`` or a :class:`UserInputError` when the spec had none."""
    if not model:
        raise UserInputError(f"provider spec {kind!r}: missing model, expected {kind}:MODEL")
    return model
