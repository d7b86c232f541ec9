"""The LLM agent: a tool-use loop over a provider and a target session.

Final-answer protocol (stated in the system prompt): the agent ends its answer with a line
starting ``FINAL ANSWER:`` followed by the answer; graders read what follows the last marker.
Every tool call the model requests counts against the tool-call budget, which the episode's
system prompt states (:func:`budget_note`); a request beyond it ends the episode as
``budget_exhausted``. Malformed arguments and unknown tools are answered
with a tool error (recorded, not sent to the target) so the model can recover. Retryable
provider errors are retried with backoff and jitter; when retries are exhausted the episode is
a harness error.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dabench.agents.base import Agent, AgentContext, EpisodeRequest, EpisodeTranscript, ToolRecorder
from dabench.errors import HarnessError
from dabench.journal.records import EpisodeStatus, Message
from dabench.providers import (
    ChatMessage,
    ModelResponse,
    Provider,
    ProviderError,
    RetryPolicy,
    ToolResultContent,
    make_provider,
    split_spec,
    with_retries,
)
from dabench.providers.builtin import endpoint_url
from dabench.providers.ping import ping
from dabench.targets.base import TargetSession
from dabench.targets.registry import Kind
from dabench.tasks.model import Task

FINAL_ANSWER_PROTOCOL = (
    "When you have the answer, end your reply with a line that starts with `FINAL ANSWER:` "
    "followed by the answer itself (a number, a name, or the requested format). Only what "
    "follows the last `FINAL ANSWER:` is graded. If the question cannot be answered from the "
    "data, say so after `FINAL ANSWER:` instead of guessing."
)
DEFAULT_SYSTEM_PROMPT = (
    "You are a data analyst answering questions about a company's data warehouse through the "
    "tools you are given. Use the tools to find the right tables and definitions before you "
    "compute; prefer documented definitions over assumptions; be precise about units."
)


def budget_note(budget: int) -> str:
    """The line that tells a model its episode's tool-call budget (appended to the system prompt
    of each episode): an agent that does not know its budget cannot plan within it."""
    return (
        f"You may make at most {budget} tool calls for this question, over all its turns; "
        "a call beyond that ends the question unanswered, so plan your calls and answer "
        "within the budget."
    )


def episode_system_prompt(system: str, budget: int) -> str:
    """An episode's system prompt: the agent's ``system`` plus :func:`budget_note`."""
    return f"{system}\n\n{budget_note(budget)}"


class LlmAgentConfig(BaseModel):
    """``agent: {kind: llm, model: anthropic:claude-sonnet-4-5, ...}``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["llm"] = "llm"
    model: str
    """``PROVIDER:MODEL``, e.g. ``anthropic:claude-sonnet-4-5``, ``openai:gpt-4.1``,
    ``fake:latency=200ms``."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, allow_inf_nan=False)
    max_tokens: int = Field(default=4096, ge=1)
    budget: int | None = Field(default=None, ge=1)
    """Tool-call budget; default: the task's."""
    system_prompt: str | None = None
    """Replaces the default system prompt; the final-answer protocol is always appended."""
    max_model_calls: int | None = Field(default=None, ge=1)
    """Cap on model calls per episode (default: budget + 2 per user turn)."""
    provider_settings: dict[str, Any] = Field(default_factory=dict)
    """Passed to ``make_provider`` (``base_url``, ``api_key``, ``timeout``...)."""
    retries: RetryPolicy = Field(default_factory=RetryPolicy)


def system_prompt_for(config: LlmAgentConfig) -> str:
    """The system prompt: the configured (or default) one plus the final-answer protocol."""
    return f"{config.system_prompt or DEFAULT_SYSTEM_PROMPT}\n\n{FINAL_ANSWER_PROTOCOL}"


class LlmAgent(Agent):
    """A model in a tool-use loop."""

    kind = "llm"
    uses_model = True

    def __init__(self, config: LlmAgentConfig, provider: Provider | None = None) -> None:
        self.config = config
        kind, model = split_spec(config.model)
        self.provider = kind
        self.model = model
        self._provider = provider or make_provider(config.model, **config.provider_settings)
        self.system = system_prompt_for(config)

    def describe(self) -> dict[str, Any]:
        """Kind, provider, model and settings (never secrets)."""
        settings = {k: v for k, v in self.config.provider_settings.items() if "key" not in k}
        return {
            "kind": self.kind,
            "provider": self.provider,
            "model": self.model,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "budget": self.config.budget,
            "system_prompt": self.system,
            "provider_settings": settings,
            "retries": self.config.retries.model_dump(),
        }

    def model_endpoint(self) -> str | None:
        """``KIND:MODEL at URL``; ``None`` for the scripted ``fake`` kind (no server)."""
        kind = self.provider or ""
        if kind == "fake":
            return None
        url = endpoint_url(kind, self.config.provider_settings.get("base_url"))
        return f"{self.config.model} at {url}"

    async def check_model(self) -> None:
        """One small call (:func:`~dabench.providers.ping.ping`), with up to 3 attempts."""
        if self.model_endpoint() is None:
            return
        policy = self.config.retries.model_copy(
            update={"max_attempts": min(3, self.config.retries.max_attempts)}
        )
        try:
            await with_retries(lambda: ping(self._provider), policy)
        except ProviderError as exc:
            raise HarnessError(
                f"model server unreachable: {self.model_endpoint()}: {exc} (start the server or "
                f"fix --base-url; check with `dabench providers ping {self.config.model}`)"
            ) from exc

    def budget_for(self, task: Task) -> int:
        """The configured budget, else the task's."""
        return self.config.budget or task.budget

    async def _complete(
        self,
        system: str,
        history: list[ChatMessage],
        tools: list[Any],
        transcript: EpisodeTranscript,
    ) -> ModelResponse:
        async def once() -> ModelResponse:
            return await self._provider.complete(
                history,
                system=system,
                tools=tools,
                max_tokens=self.config.max_tokens,
                temperature=self.config.temperature,
            )

        def count(attempt: int, error: object, delay: float) -> None:
            transcript.transient_retries += 1

        try:
            return await with_retries(once, self.config.retries, on_retry=count)
        except ProviderError as exc:
            kind = "retries exhausted" if exc.retryable else "non-retryable"
            raise HarnessError(f"provider {self.provider} failed ({kind}): {exc}") from exc

    async def run(self, request: EpisodeRequest, transcript: EpisodeTranscript) -> EpisodeStatus:
        """The tool-use loop over every user turn."""
        recorder = ToolRecorder(transcript)
        # When the target already knows the tools, the session opens while the model thinks.
        opening = asyncio.ensure_future(recorder.open(request.target))
        try:
            status = await self._loop(request, transcript, recorder, opening)
        except BaseException:
            opening.cancel()
            await asyncio.gather(opening, return_exceptions=True)
            raise
        await opening  # the session exists (and is audited) even without tool calls
        return status

    async def _loop(
        self,
        request: EpisodeRequest,
        transcript: EpisodeTranscript,
        recorder: ToolRecorder,
        opening: asyncio.Future[TargetSession],
    ) -> EpisodeStatus:
        tools = request.target.known_tools()
        if tools is None:
            tools = await (await opening).tools()
        names = {t.name for t in tools}
        budget = request.budget
        turns = request.task.messages
        max_calls = self.config.max_model_calls or budget + 2 * len(turns)
        model_calls = 0
        history: list[ChatMessage] = []
        system = episode_system_prompt(self.system, budget)
        transcript.messages.append(Message(role="system", content=system))
        for turn, prompt in enumerate(turns):
            history.append(ChatMessage(role="user", content=prompt))
            transcript.messages.append(Message(role="user", content=prompt))
            while True:
                if model_calls >= max_calls:
                    return "budget_exhausted"
                model_calls += 1
                resp = await self._complete(system, history, tools, transcript)
                transcript.add_usage(resp.usage, resp.cost_usd, resp.cost_source)
                history.append(
                    ChatMessage(role="assistant", content=resp.text, tool_calls=resp.tool_calls)
                )
                transcript.messages.append(
                    Message(
                        role="assistant",
                        content=resp.text,
                        tool_calls=[c.model_dump() for c in resp.tool_calls],
                    )
                )
                if not resp.tool_calls:
                    transcript.answers.append(resp.text)
                    break
                results: list[ToolResultContent] = []
                for req in resp.tool_calls:
                    if len(transcript.tool_calls) >= budget:
                        return "budget_exhausted"
                    if req.parse_error is not None:
                        text = _tool_error(
                            "INVALID_ARGUMENTS",
                            f"tool arguments are not a JSON object: {req.parse_error}",
                        )
                        rec = recorder.refuse(
                            req.name, {"raw": req.raw_arguments}, turn, "INVALID_ARGUMENTS", text
                        )
                    elif req.name not in names:
                        text = _tool_error(
                            "UNKNOWN_TOOL",
                            f"no tool named {req.name!r}; available: {', '.join(sorted(names))}",
                        )
                        rec = recorder.refuse(req.name, req.arguments, turn, "UNKNOWN_TOOL", text)
                    else:
                        session = await opening
                        rec = await recorder.call(session, req.name, req.arguments, turn)
                    results.append(
                        ToolResultContent(
                            tool_call_id=req.id, content=rec.result, is_error=rec.is_error
                        )
                    )
                    transcript.messages.append(
                        Message(role="tool", content=rec.result, tool_call_id=req.id)
                    )
                history.append(ChatMessage(role="tool", tool_results=results))
        return "completed" if transcript.answers and transcript.answers[-1].strip() else "no_answer"


def _tool_error(code: str, message: str) -> str:
    return json.dumps({"error": {"code": code, "message": message}})


def _factory(config: LlmAgentConfig, context: AgentContext) -> Agent:
    return LlmAgent(config)


KIND: Kind[Agent, AgentContext] = Kind("llm", LlmAgentConfig, _factory)
"""The ``llm`` agent kind (named in the agent registry)."""
