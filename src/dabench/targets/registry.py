"""The registry of target kinds: ``kind`` -> config model + factory.

A new kind (e.g. ``kibana``) is added with :func:`register_target`, not by editing the runner::

    register_target("kibana", KibanaTargetConfig, lambda cfg, ctx: KibanaTarget(cfg, ctx))

An arm's ``target`` mapping is validated by the config model of its ``kind``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from dabench.errors import UserInputError
from dabench.targets.base import Target, TargetContext

TargetFactory = Callable[[Any, TargetContext], Target]


@dataclass(frozen=True)
class TargetKind:
    """A registered target kind."""

    name: str
    config_model: type[BaseModel]
    factory: TargetFactory


_REGISTRY: dict[str, TargetKind] = {}


def register_target(name: str, config_model: type[BaseModel], factory: TargetFactory) -> None:
    """Register (or replace) a target kind."""
    _REGISTRY[name] = TargetKind(name, config_model, factory)


def target_kinds() -> dict[str, TargetKind]:
    """All registered target kinds (the built-in ones are registered on first use)."""
    _ensure_builtins()
    return dict(_REGISTRY)


def _ensure_builtins() -> None:
    # Importing the modules registers their kinds.
    from dabench.targets import mcp, reference  # noqa: F401


def validate_target_config(raw: dict[str, Any], where: str = "target") -> BaseModel:
    """Validate an arm's ``target`` mapping against its kind's config model."""
    kinds = target_kinds()
    kind = raw.get("kind")
    if kind not in kinds:
        raise UserInputError(
            f"{where}.kind: unknown target kind {kind!r}; expected one of {sorted(kinds)}"
        )
    try:
        return kinds[kind].config_model.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ()))
        raise UserInputError(f"{where}.{loc}: {err.get('msg')}") from exc


def make_target(raw: dict[str, Any], context: TargetContext, where: str = "target") -> Target:
    """Build a target from an arm's ``target`` mapping."""
    config = validate_target_config(raw, where)
    return target_kinds()[raw["kind"]].factory(config, context)
