"""The registry of agent kinds: ``kind`` -> config model + factory.

A new kind is added with :func:`register_agent`; the runner never names kinds itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from dabench.agents.base import Agent, AgentContext
from dabench.targets.registry import KindRegistry

AGENTS: KindRegistry[Agent, AgentContext] = KindRegistry(
    "agent",
    {
        "claude-cli": "dabench.agents.claude_cli:KIND",
        "command": "dabench.agents.command:KIND",
        "external": "dabench.agents.external:EXTERNAL_KIND",
        "human": "dabench.agents.external:HUMAN_KIND",
        "kibana": "dabench.agents.kibana:KIND",
        "llm": "dabench.agents.llm:KIND",
        "oracle": "dabench.agents.oracle:KIND",
        "probe": "dabench.agents.probe:KIND",
        "replay": "dabench.agents.replay:KIND",
    },
)
"""The built-in agent kinds, each imported when an arm first uses it."""


def register_agent(
    name: str, config_model: type[BaseModel], factory: Callable[[Any, AgentContext], Agent]
) -> None:
    """Register (or replace) an agent kind."""
    AGENTS.register(name, config_model, factory)


def validate_agent_config(raw: dict[str, Any], where: str = "agent") -> BaseModel:
    """Validate an arm's ``agent`` mapping against its kind's config model."""
    return AGENTS.validate(raw, where)


def make_agent(raw: dict[str, Any], context: AgentContext, where: str = "agent") -> Agent:
    """Build an agent from an arm's ``agent`` mapping."""
    return AGENTS.make(raw, context, where)
