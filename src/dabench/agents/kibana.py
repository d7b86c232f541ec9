"""The ``kibana`` agent: converse with an Elastic Agent Builder agent, one round per user turn.

The agent loop runs inside Kibana; this agent sends each user message of the task (the
final-answer protocol appended unless ``answer_protocol: false``), carries the
``conversation_id`` to later turns, and records what each round reports into the same
episode record as the LLM agent: every tool call step (tool id, params, rendered results) as a
:class:`~dabench.journal.records.ToolCall`, the final message as the turn's answer,
``model_usage`` as tokens (and a cost from the price table when ``price_model`` names the
connector's model), the time to first token, and a
:class:`~dabench.journal.records.TargetRound` with conversation and round ids, reasoning and
timings. Kibana cannot be stopped mid-round, so a round that takes the episode past its
tool-call budget ends it as ``budget_exhausted`` afterwards.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dabench.agents.base import Agent, AgentContext, EpisodeRequest, EpisodeTranscript
from dabench.agents.llm import FINAL_ANSWER_PROTOCOL
from dabench.errors import HarnessError
from dabench.journal.records import (
    EpisodeStatus,
    Message,
    TargetRound,
    TokenUsage,
    ToolCall,
    TtftSource,
)
from dabench.providers import cost_for, split_spec
from dabench.targets.kibana.target import KibanaSession, KibanaTarget
from dabench.targets.kibana.wire import ConverseRound
from dabench.targets.registry import Kind
from dabench.tasks.model import Task


class KibanaAgentConfig(BaseModel):
    """``agent: {kind: kibana, connector_id: my-claude-connector}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["kibana"] = "kibana"
    connector_id: str | None = None
    """The Kibana connector (the arm's model); ``None``: Kibana's default connector."""
    stream: bool = True
    """Use ``/converse/async`` (server-sent events, measured time to first token)."""
    price_model: str | None = None
    """``PROVIDER:MODEL`` the connector runs (e.g. ``anthropic:claude-sonnet-4-5``), to price
    ``model_usage`` with the price table; without it the cost is unknown."""
    prices: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    """Price overrides ``{provider: {model: {input, output, cache_read, cache_write}}}``."""
    answer_protocol: bool = True
    """Append the final-answer protocol (``FINAL ANSWER:`` line) to every user message."""
    budget: int | None = Field(default=None, ge=1)
    """Tool-call budget; default: the task's."""


def usage_of(model_usage: dict[str, Any] | None) -> TokenUsage:
    """Tokens of a round's ``model_usage`` (``cached_input_tokens`` is a subset of
    ``input_tokens`` and is counted as cache reads); zero when absent or malformed."""
    if not model_usage:
        return TokenUsage()

    def count(key: str) -> int:
        value = model_usage.get(key)
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0

    cached = count("cached_input_tokens")
    return TokenUsage(
        input=max(count("input_tokens") - cached, 0),
        output=count("output_tokens"),
        cache_read=cached,
    )


class KibanaAgent(Agent):
    """Converses with an Agent Builder agent over a ``kibana`` target."""

    kind = "kibana"
    provider = "kibana"
    uses_model = True

    def __init__(self, config: KibanaAgentConfig) -> None:
        self.config = config
        self.model = config.connector_id or "default-connector"
        self._price = split_spec(config.price_model) if config.price_model else None

    def describe(self) -> dict[str, Any]:
        """Kind, connector, streaming and pricing settings."""
        return {
            "kind": self.kind,
            "provider": self.provider,
            "model": self.model,
            "connector_id": self.config.connector_id,
            "stream": self.config.stream,
            "price_model": self.config.price_model,
            "answer_protocol": self.config.answer_protocol,
            "budget": self.config.budget,
        }

    def budget_for(self, task: Task) -> int:
        """The configured budget, else the task's."""
        return self.config.budget or task.budget

    def _input(self, prompt: str) -> str:
        return f"{prompt}\n\n{FINAL_ANSWER_PROTOCOL}" if self.config.answer_protocol else prompt

    def _cost(self, usage: TokenUsage, model_usage: dict[str, Any] | None) -> float | None:
        if self._price is None or model_usage is None:
            return None
        cost, _source = cost_for(self._price[0], self._price[1], usage, self.config.prices)
        return cost

    async def run(self, request: EpisodeRequest, transcript: EpisodeTranscript) -> EpisodeStatus:
        """One converse round per user turn; the last round's message is graded."""
        target = request.target
        if not isinstance(target, KibanaTarget):
            raise HarnessError(
                f"agent kind 'kibana' needs a target of kind 'kibana', not {target.label!r}"
            )
        session = await target.open_session()
        for turn, prompt in enumerate(request.task.messages):
            message = self._input(prompt)
            transcript.messages.append(Message(role="user", content=message))
            try:
                rnd = await session.converse(
                    message, connector_id=self.config.connector_id, stream=self.config.stream
                )
            except HarnessError as exc:  # the round is lost; the retries it took are not
                transcript.transient_retries += exc.retries
                raise
            self._record(rnd, turn, session, transcript)
            if len(transcript.tool_calls) > request.budget:
                return "budget_exhausted"
        return "completed" if transcript.answers and transcript.answers[-1].strip() else "no_answer"

    def _record(
        self, rnd: ConverseRound, turn: int, session: KibanaSession, transcript: EpisodeTranscript
    ) -> None:
        if session.handle not in transcript.sessions and rnd.conversation_id:
            transcript.sessions.append(session.handle)
        calls = [
            {"id": step.tool_call_id, "name": step.tool_id, "arguments": step.params}
            for step in rnd.tool_steps
        ]
        if calls:
            transcript.messages.append(Message(role="assistant", tool_calls=calls))
        for step in rnd.tool_steps:
            text = step.text()
            call = ToolCall(
                index=len(transcript.tool_calls),
                turn=turn,
                session=session.handle if rnd.conversation_id else "",
                name=step.tool_id,
                arguments=step.params,
                result=text,
                is_error=step.is_error,
                error_code="TOOL_ERROR" if step.is_error else None,
            )
            transcript.tool_calls.append(call)
            transcript.messages.append(
                Message(role="tool", content=text, tool_call_id=step.tool_call_id)
            )
        transcript.messages.append(Message(role="assistant", content=rnd.message))
        transcript.answers.append(rnd.message)
        usage = usage_of(rnd.model_usage)
        if rnd.model_usage is None:  # this Kibana did not report usage: unknown, never 0
            transcript.usage_known = False
        unpriced = rnd.model_usage is None or any(r.model_usage is None for r in transcript.rounds)
        cost = None if unpriced else self._cost(usage, rnd.model_usage)
        transcript.add_usage(usage, cost, "price_table")
        if unpriced:  # one round without usage makes the episode's cost unknown, not lower
            transcript.cost_usd, transcript.cost_source = None, "none"
        measured = rnd.measured_ttft_ms is not None
        ttft = rnd.measured_ttft_ms if measured else rnd.reported_ttft_ms
        source: TtftSource | None = None if ttft is None else "measured" if measured else "reported"
        if transcript.ttft_ms is None and ttft is not None:
            transcript.ttft_ms = round(ttft, 3)
            transcript.ttft_source = source
        transcript.rounds.append(
            TargetRound(
                turn=turn,
                conversation_id=rnd.conversation_id,
                round_id=rnd.round_id,
                status=rnd.status,
                reasoning=rnd.reasoning,
                model_usage=rnd.model_usage,
                ttft_ms=None if ttft is None else round(ttft, 3),
                ttft_source=source,
                ttlt_ms=rnd.reported_ttlt_ms,
                reported_ttft_ms=rnd.reported_ttft_ms,
                wall_ms=round(rnd.wall_ms, 3),
                retries=rnd.retries,
            )
        )
        transcript.transient_retries += rnd.retries


def _factory(config: KibanaAgentConfig, context: AgentContext) -> Agent:
    return KibanaAgent(config)


KIND: Kind[Agent, AgentContext] = Kind("kibana", KibanaAgentConfig, _factory)
"""The ``kibana`` agent kind (named in the agent registry)."""
