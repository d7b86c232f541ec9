"""The registry of agent kinds: ``kind`` -> config model + factory.

A new kind is added with :func:`register_agent`; the runner never names kinds itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from dabench.agents.base import Agent, AgentContext
from dabench.errors import UserInputError

AgentFactory = Callable[[Any, AgentContext], Agent]


@dataclass(frozen=True)
class AgentKind:
    """A registered agent kind."""

    name: str
    config_model: type[BaseModel]
    factory: AgentFactory


_REGISTRY: dict[str, AgentKind] = {}


def register_agent(name: str, config_model: type[BaseModel], factory: AgentFactory) -> None:
    """Register (or replace) an agent kind."""
    _REGISTRY[name] = AgentKind(name, config_model, factory)


def agent_kinds() -> dict[str, AgentKind]:
    """All registered agent kinds."""
    from dabench.agents import llm, oracle, replay  # noqa: F401  (registers the built-ins)

    return dict(_REGISTRY)


def validate_agent_config(raw: dict[str, Any], where: str = "agent") -> BaseModel:
    """Validate an arm's ``agent`` mapping against its kind's config model."""
    kinds = agent_kinds()
    kind = raw.get("kind")
    if kind not in kinds:
        raise UserInputError(
            f"{where}.kind: unknown agent kind {kind!r}; expected one of {sorted(kinds)}"
        )
    try:
        return kinds[kind].config_model.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ()))
        raise UserInputError(f"{where}.{loc}: {err.get('msg')}") from exc


def make_agent(raw: dict[str, Any], context: AgentContext, where: str = "agent") -> Agent:
    """Build an agent from an arm's ``agent`` mapping."""
    config = validate_agent_config(raw, where)
    return agent_kinds()[raw["kind"]].factory(config, context)
