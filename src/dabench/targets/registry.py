"""Registries of named component kinds (``kind`` -> config model + factory), and the one for
target kinds.

A new target kind (e.g. ``kibana``) is added with :func:`register_target`, not by editing
the runner::

    register_target("kibana", KibanaTargetConfig, lambda cfg, ctx: KibanaTarget(cfg, ctx))

An arm's ``target`` mapping is validated by the config model of its ``kind``. The built-in
kinds are named as ``"module:attr"`` strings of their :class:`Kind` and imported only when an
arm uses them, so no registry imports its implementations (and none imports it back).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from dabench.errors import UserInputError
from dabench.lazy import load_ref
from dabench.targets.base import Target, TargetContext

T = TypeVar("T")
C = TypeVar("C")


@dataclass(frozen=True)
class Kind(Generic[T, C]):
    """A registered kind: its config model and the factory building it."""

    name: str
    config_model: type[BaseModel]
    factory: Callable[[Any, C], T]


class ConfigError(UserInputError):
    """A component mapping that its kind's config model refuses; ``loc`` is the field's path
    inside the mapping (``("temperature",)``), for locating it in the file."""

    def __init__(self, message: str, loc: tuple[str | int, ...]) -> None:
        super().__init__(message)
        self.loc = loc


class KindRegistry(Generic[T, C]):
    """Named kinds of one component (targets, agents)."""

    def __init__(self, component: str, builtins: Mapping[str, str]) -> None:
        self.component = component
        self._lazy = dict(builtins)
        """Kind name -> ``"module:attr"`` of its :class:`Kind`, until first used."""
        self._kinds: dict[str, Kind[T, C]] = {}

    def register(
        self, name: str, config_model: type[BaseModel], factory: Callable[[Any, C], T]
    ) -> None:
        """Register (or replace) a kind."""
        self._lazy.pop(name, None)
        self._kinds[name] = Kind(name, config_model, factory)

    def names(self) -> list[str]:
        """Every kind's name, sorted (imports none of them)."""
        return sorted({*self._kinds, *self._lazy})

    def get(self, name: str) -> Kind[T, C] | None:
        """The kind called ``name`` (a built-in one is imported now), or ``None``."""
        ref = self._lazy.pop(name, None)
        if ref is not None:
            kind = load_ref(ref)
            if not isinstance(kind, Kind) or kind.name != name:
                raise TypeError(f"{ref} is not the Kind {name!r}")
            self._kinds[name] = kind
        return self._kinds.get(name)

    def kinds(self) -> dict[str, Kind[T, C]]:
        """Every kind (importing the built-in ones)."""
        return {name: kind for name in self.names() if (kind := self.get(name)) is not None}

    def validate(self, raw: dict[str, Any], where: str) -> BaseModel:
        """Validate a ``{kind: ..., ...}`` mapping against its kind's config model."""
        name = raw.get("kind")
        kind = self.get(name) if isinstance(name, str) else None
        if kind is None:
            raise ConfigError(
                f"{where}.kind: unknown {self.component} kind {name!r}; "
                f"expected one of {self.names()}",
                ("kind",),
            )
        try:
            return kind.config_model.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            parts = tuple(err.get("loc", ()))
            loc = ".".join(str(p) for p in parts)
            raise ConfigError(f"{where}.{loc}: {err.get('msg')}", parts) from exc

    def make(self, raw: dict[str, Any], context: C, where: str) -> T:
        """Build a component from its mapping."""
        config = self.validate(raw, where)
        return self._kinds[raw["kind"]].factory(config, context)


TARGETS: KindRegistry[Target, TargetContext] = KindRegistry(
    "target",
    {
        "reference": "dabench.targets.reference:KIND",
        "mcp": "dabench.targets.mcp:KIND",
        "kibana": "dabench.targets.kibana.target:KIND",
    },
)


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
