"""The ``external`` agent kind: episodes played from outside the harness with ``dabench play``.

A person, a script or an LLM-driven process reads each prompt, calls tools and answers through
the stepwise CLI; the harness records the episode like any other arm's. The kind exists so
that the arm, the manifest and the journal name what played; ``dabench run`` cannot drive it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dabench.agents.base import Agent, AgentContext, EpisodeRequest, EpisodeTranscript
from dabench.agents.llm import DEFAULT_SYSTEM_PROMPT, FINAL_ANSWER_PROTOCOL
from dabench.errors import HarnessError
from dabench.journal.records import EpisodeStatus
from dabench.targets.registry import Kind
from dabench.tasks.model import Task


class _PlayedAgentConfig(BaseModel):
    """What an agent played through ``dabench play`` is configured with."""

    model_config = ConfigDict(extra="forbid")

    label: str | None = None
    """What plays (a model name, ``human:<name>``...); recorded as the episodes' model."""
    budget: int | None = Field(default=None, ge=1)
    """Tool-call budget; default: the task's."""
    system_prompt: str | None = None
    """The instructions shown with each episode (default: the LLM agent's analyst prompt);
    the final-answer protocol is always appended, as for the LLM agent."""


class ExternalAgentConfig(_PlayedAgentConfig):
    """``agent: {kind: external, label: "my-agent", budget: 20}``: a script or a program."""

    kind: Literal["external"] = "external"


class HumanAgentConfig(_PlayedAgentConfig):
    """``agent: {kind: human, label: "human:alice"}``: a person at ``dabench play``'s
    interactive terminal (a human baseline beside the models)."""

    kind: Literal["human"] = "human"


class ExternalAgent(Agent):
    """An agent outside the harness; its episodes are played with ``dabench play``."""

    kind = "external"

    def __init__(self, config: ExternalAgentConfig | HumanAgentConfig) -> None:
        self.config = config
        self.kind = config.kind
        self.model = config.label
        self.instructions = (
            f"{config.system_prompt or DEFAULT_SYSTEM_PROMPT}\n\n{FINAL_ANSWER_PROTOCOL}"
        )

    def describe(self) -> dict[str, Any]:
        """Kind, label, budget and the instructions shown."""
        return {**self.config.model_dump(), "system_prompt": self.instructions}

    def budget_for(self, task: Task) -> int:
        """The configured budget, else the task's."""
        return self.config.budget or task.budget

    async def run(self, request: EpisodeRequest, transcript: EpisodeTranscript) -> EpisodeStatus:
        """Refused: an external agent plays through ``dabench play``, not ``dabench run``."""
        raise HarnessError(
            f"agent kind {self.kind!r} is played with `dabench play` (start/next/call/answer/"
            "finish, or interactively), not by `dabench run`"
        )


def _factory(config: ExternalAgentConfig | HumanAgentConfig, context: AgentContext) -> Agent:
    return ExternalAgent(config)


EXTERNAL_KIND: Kind[Agent, AgentContext] = Kind("external", ExternalAgentConfig, _factory)
"""The ``external`` agent kind (named in the agent registry)."""
HUMAN_KIND: Kind[Agent, AgentContext] = Kind("human", HumanAgentConfig, _factory)
"""The ``human`` agent kind (named in the agent registry)."""
