"""Registries of named component kinds (``kind`` -> config model + factory), and the one for
target kinds.

A new target kind (e.g. ``kibana``) is added with :func:`register_target`, not by editing
the runner::

    register_target("kibana", KibanaTargetConfig, lambda cfg, ctx: KibanaTarget(cfg, ctx))

An arm's ``target`` mapping is validated by the config model of its ``kind``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from dabench.errors import UserInputError
from dabench.targets.base import Target, TargetContext

T = TypeVar("T")
C = TypeVar("C")


@dataclass(frozen=True)
class Kind(Generic[T, C]):
    """A registered kind: its config model and the factory building it."""

    name: str
    config_model: type[BaseModel]
    factory: Callable[[Any, C], T]


class KindRegistry(Generic[T, C]):
    """Named kinds of one component (targets, agents)."""

    def __init__(self, component: str, load_builtins: Callable[[], None]) -> None:
        self.component = component
        self._load_builtins = load_builtins
        self._kinds: dict[str, Kind[T, C]] = {}

    def register(
        self, name: str, config_model: type[BaseModel], factory: Callable[[Any, C], T]
    ) -> None:
        """Register (or replace) a kind."""
        self._kinds[name] = Kind(name, config_model, factory)

    def kinds(self) -> dict[str, Kind[T, C]]:
        """Every registered kind (the built-in ones are registered on first use)."""
        self._load_builtins()
        return dict(self._kinds)

    def validate(self, raw: dict[str, Any], where: str) -> BaseModel:
        """Validate a ``{kind: ..., ...}`` mapping against its kind's config model."""
        kinds = self.kinds()
        kind = raw.get("kind")
        if kind not in kinds:
            raise UserInputError(
                f"{where}.kind: unknown {self.component} kind {kind!r}; "
                f"expected one of {sorted(kinds)}"
            )
        try:
            return kinds[kind].config_model.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err.get("loc", ()))
            raise UserInputError(f"{where}.{loc}: {err.get('msg')}") from exc

    def make(self, raw: dict[str, Any], context: C, where: str) -> T:
        """Build a component from its mapping."""
        config = self.validate(raw, where)
        return self._kinds[raw["kind"]].factory(config, context)


def _builtin_targets() -> None:
    from dabench.targets import kibana, mcp, reference  # noqa: F401  (importing registers them)


TARGETS: KindRegistry[Target, TargetContext] = KindRegistry("target", _builtin_targets)


def register_target(
    name: str, config_model: type[BaseModel], factory: Callable[[Any, TargetContext], Target]
) -> None:
    """Register (or replace) a target kind."""
    TARGETS.register(name, config_model, factory)


def validate_target_config(raw: dict[str, Any], where: str = "target") -> BaseModel:
    """Validate an arm's ``target`` mapping against its kind's config model."""
    return TARGETS.validate(raw, where)


def make_target(raw: dict[str, Any], context: TargetContext, where: str = "target") -> Target:
    """Build a target from an arm's ``target`` mapping."""
    return TARGETS.make(raw, context, where)
