"""``FakeProvider``: a deterministic, in-process stand-in for a model.

It measures the harness, not a model: no network, a fixed latency per call (or one drawn
from a lognormal distribution with a given median and p99, as real models think), and a
scripted behaviour. For each user turn it makes up to ``calls`` tool calls, one per response (a
``search`` first when that tool is offered and ``search`` is on, then the SQL tool with the
configured ``sql``), and then answers ``answer``, where ``{last_result}`` is replaced by the
content of the last tool result. Tools it is not offered are skipped.

Spec: ``fake[:key=value,...]`` (a leading bare word is a label: ``fake:scripted``) with
keys ``latency`` (``200ms``, ``1.5s``, ``0``), ``calls`` (int), ``search`` (``on``/``off``),
``sql``, ``answer``, ``sql_tool``, ``search_tool``, ``fail_first`` (the first N calls
raise a retryable ``ProviderError``), ``median`` and ``p99`` (a lognormal latency instead of
``latency``), ``rate_429`` and ``rate_5xx`` (the probability that a call fails like a rate
limit, at once with ``retry_after``, or like a server error, after its latency), and
``seed`` (of the draws, in call order). Values cannot contain commas in the spec; pass such
values as settings instead (``make_provider("fake", sql="SELECT a, b FROM t")``).
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import re
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dabench.errors import UserInputError
from dabench.fields import FiniteNonNegative, Seconds
from dabench.journal.records import TokenUsage
from dabench.providers.base import (
    ChatMessage,
    ModelResponse,
    ProviderError,
    ToolCallRequest,
    ToolSpec,
)

_LATENCY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s)?\s*$")
_CHARS_PER_TOKEN = 4
_Z99 = 2.3263478740408408
"""The standard normal's 99th percentile: a lognormal's p99 is ``median * exp(sigma * _Z99)``."""


class FakeSettings(BaseModel):
    """The scripted behaviour of a :class:`FakeProvider`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    latency: FiniteNonNegative = 0.0
    """Seconds each call takes (slept with ``asyncio.sleep``)."""
    calls: int = Field(default=1, ge=0)
    """Tool calls per user turn before answering (the search call counts)."""
    search: bool = True
    """Call ``search_tool`` first when it is offered."""
    sql: str = "SELECT 1"
    answer: str = "{last_result}"
    """The final answer; ``{last_result}`` becomes the last tool result's content."""
    sql_tool: str = "sql_query"
    search_tool: str = "search"
    fail_first: int = Field(default=0, ge=0)
    """The first N calls of this provider raise a retryable :class:`ProviderError`."""
    median: Seconds | None = None
    """Median seconds of a lognormal latency (replaces ``latency``; needs ``p99``)."""
    p99: Seconds | None = None
    """99th percentile seconds of the lognormal latency (at least ``median``)."""
    rate_429: float = Field(default=0.0, ge=0.0, le=1.0)
    """Probability that a call is refused at once like an HTTP 429 (retryable, waiting
    ``retry_after``)."""
    rate_5xx: float = Field(default=0.0, ge=0.0, le=1.0)
    """Probability that a call fails like an HTTP 503 after its latency (retryable)."""
    retry_after: FiniteNonNegative = 1.0
    """Seconds a 429 asks the client to wait."""
    seed: int = 0
    """Seed of the latency and failure draws (drawn in call order)."""

    @model_validator(mode="after")
    def _one_latency(self) -> FakeSettings:
        if (self.median is None) != (self.p99 is None):
            raise ValueError("median and p99 go together")
        if self.median is not None and self.p99 is not None:
            if self.latency:
                raise ValueError("latency is fixed; median/p99 draw it: give one or the other")
            if self.p99 < self.median:
                raise ValueError(f"p99 {self.p99} is below the median {self.median}")
        return self

    def sigma(self) -> float:
        """The lognormal's sigma (0 for a fixed latency)."""
        if self.median is None or self.p99 is None:
            return 0.0
        return math.log(self.p99 / self.median) / _Z99


def parse_latency(text: str) -> float:
    """Seconds from ``"200ms"``, ``"1.5s"`` or ``"0"``."""
    match = _LATENCY.match(text)
    if match is None or (match.group(2) is None and float(match.group(1)) != 0.0):
        raise UserInputError(f"fake provider: latency {text!r}: expected e.g. 200ms, 1.5s or 0")
    value = float(match.group(1))
    return value / 1000.0 if match.group(2) == "ms" else value


def parse_fake_spec(options: str, **settings: Any) -> FakeSettings:
    """``FakeSettings`` from the part of a spec after ``fake:`` plus keyword ``settings``."""
    values: dict[str, Any] = {}
    items = [part.strip() for part in options.split(",") if part.strip()]
    if items and "=" not in items[0]:
        items = items[1:]  # a leading bare word is a label: fake:scripted, fake:smoke,calls=2
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise UserInputError(f"fake provider: {item!r}: expected key=value")
        values[key.strip()] = value.strip()
    values.update(settings)
    for key in ("latency", "median", "p99", "retry_after"):
        if isinstance(values.get(key), str):
            values[key] = parse_latency(values[key])
    if isinstance(values.get("search"), str):
        values["search"] = values["search"].lower() in {"on", "true", "1", "yes"}
    try:
        return FakeSettings.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "settings"
        raise UserInputError(
            f"fake provider: {field}: {err['msg']} (keys: {', '.join(FakeSettings.model_fields)})"
        ) from exc


class FakeProvider:
    """A scripted :class:`~dabench.providers.base.Provider` with no model behind it."""

    name = "fake"

    def __init__(self, settings: FakeSettings | None = None, *, model: str = "scripted") -> None:
        self.settings = settings or FakeSettings()
        self.model = model
        self.calls_made = 0
        self.latencies: list[float] = []
        """Every latency slept, in call order (seconds)."""
        self.refused_429 = 0
        self.failed_5xx = 0
        self.retry_after_s = 0.0
        """The waits the 429s asked for, summed (seconds)."""
        self._rng = random.Random(self.settings.seed)

    def draw_latency(self) -> float:
        """The next latency in seconds: fixed, or drawn from the lognormal."""
        s = self.settings
        if s.median is None:
            return s.latency
        return self._rng.lognormvariate(math.log(s.median), s.sigma())

    async def complete(
        self,
        messages: list[ChatMessage],
        *,
        system: str,
        tools: list[ToolSpec],
        max_tokens: int,
        temperature: float,
    ) -> ModelResponse:
        """The next scripted step for this conversation (deterministic in its input)."""
        started = time.perf_counter()
        self.calls_made += 1
        s = self.settings
        if s.rate_429 and self._rng.random() < s.rate_429:
            self.refused_429 += 1
            self.retry_after_s += s.retry_after
            raise ProviderError(
                "fake: HTTP 429: injected rate limit", retryable=True, retry_after=s.retry_after
            )
        latency = self.draw_latency()
        failing = bool(s.rate_5xx) and self._rng.random() < s.rate_5xx
        if latency:
            self.latencies.append(latency)
            await asyncio.sleep(latency)
        if failing:
            self.failed_5xx += 1
            raise ProviderError("fake: HTTP 503: injected server error", retryable=True)
        if self.calls_made <= self.settings.fail_first:
            raise ProviderError(
                f"fake: injected failure {self.calls_made}/{self.settings.fail_first}",
                retryable=True,
                retry_after=0.0,
            )
        turn_start = _last_user_index(messages)
        question = messages[turn_start].content if turn_start >= 0 else ""
        done = sum(len(m.tool_calls) for m in messages[turn_start + 1 :])
        plan = self._plan(tools, question)
        if done < len(plan):
            name, arguments = plan[done]
            call = ToolCallRequest(
                id=f"fake-{len(messages)}-{done}",
                name=name,
                arguments=arguments,
                raw_arguments=json.dumps(arguments, sort_keys=True),
            )
            text, calls, stop = "", [call], "tool_use"
        else:
            text = self.settings.answer.replace("{last_result}", _last_result(messages))
            calls, stop = [], "end_turn"
        return ModelResponse(
            text=text,
            tool_calls=calls,
            stop_reason=stop,
            usage=_usage(system, messages, text, calls),
            cost_usd=0.0,
            cost_source="provider",
            model=self.model,
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )

    def _plan(self, tools: list[ToolSpec], question: str) -> list[tuple[str, dict[str, Any]]]:
        offered = {t.name: t for t in tools}
        plan: list[tuple[str, dict[str, Any]]] = []
        search = offered.get(self.settings.search_tool)
        if self.settings.search and search is not None and self.settings.calls > 0:
            plan.append((search.name, {_string_field(search, ("query", "q")): question}))
        sql = offered.get(self.settings.sql_tool)
        while sql is not None and len(plan) < self.settings.calls:
            plan.append((sql.name, {_string_field(sql, ("sql", "query")): self.settings.sql}))
        return plan


def _string_field(tool: ToolSpec, preferred: tuple[str, ...]) -> str:
    """The argument to fill: a preferred property name, else the first required string one."""
    properties = tool.input_schema.get("properties") or {}
    for name in preferred:
        if name in properties:
            return name
    for name in tool.input_schema.get("required") or []:
        if (properties.get(name) or {}).get("type") == "string":
            return str(name)
    return preferred[0]


def _last_user_index(messages: list[ChatMessage]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index
    return -1


def _last_result(messages: list[ChatMessage]) -> str:
    for message in reversed(messages):
        if message.role == "user":
            return ""
        if message.tool_results:
            return message.tool_results[-1].content
    return ""


def _usage(
    system: str, messages: list[ChatMessage], text: str, calls: list[ToolCallRequest]
) -> TokenUsage:
    """Deterministic token counts: characters / 4 of what went in and came out."""
    chars_in = len(system) + sum(
        len(m.content)
        + sum(len(c.raw_arguments) for c in m.tool_calls)
        + sum(len(r.content) for r in m.tool_results)
        for m in messages
    )
    chars_out = len(text) + sum(len(c.raw_arguments) + len(c.name) for c in calls)
    return TokenUsage(
        input=chars_in // _CHARS_PER_TOKEN + 1, output=chars_out // _CHARS_PER_TOKEN + 1
    )
