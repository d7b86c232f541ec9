"""The LLM judge: claim decomposition over a :class:`~dabench.providers.base.Provider`.

The judge model is pinned (the provider's model, temperature 0), the prompt and rubric are
versioned files whose versions go into every judged grade, and verdicts are cached by SHA-256
of (provider, model, prompt version, rubric version, inputs). A reply that is not valid JSON
for :class:`~dabench.judge.model.JudgeVerdict` is retried once with the validation error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import partial
from typing import Any

from pydantic import ValidationError

from dabench.judge.cache import JudgeCache, cache_key
from dabench.judge.model import JudgeVerdict
from dabench.judge.prompt import (
    DEFAULT_TOOL_OUTPUT_CHARS,
    JudgeInput,
    PromptTemplate,
    load_prompt,
)
from dabench.judge.rubric import Rubric, calibration_summary, load_rubric
from dabench.providers.base import ChatMessage, ModelResponse, Provider, ProviderError
from dabench.providers.retry import RetryPolicy, with_retries

JUDGE_TEMPERATURE = 0.0
SYSTEM_PROMPT = "You grade answers of a data agent. Reply with one JSON object only."


class JudgeError(Exception):
    """The judge could not produce a valid verdict (provider failure or invalid JSON twice)."""


@dataclass(frozen=True)
class JudgeResult:
    """A validated verdict and how it was obtained."""

    verdict: JudgeVerdict
    key: str
    """The cache key (SHA-256 hex)."""
    cached: bool
    attempts: int
    """Model calls made (0 when cached, 2 after a retry)."""
    cost_usd: float | None = None


def _json_object(text: str) -> str:
    """The JSON object in a reply, tolerating a code fence or text around it."""
    stripped = text.strip()
    fence = re.match(r"^```[A-Za-z]*\s*\n(.*?)\n?```$", stripped, re.DOTALL)
    if fence:
        stripped = fence.group(1).strip()
    start, end = stripped.find("{"), stripped.rfind("}")
    return stripped[start : end + 1] if 0 <= start < end else stripped


def parse_verdict(text: str, rubric_ids: list[str]) -> JudgeVerdict:
    """Validate a reply; raises ``ValueError`` saying what is wrong."""
    try:
        verdict = JudgeVerdict.model_validate_json(_json_object(text))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(f"the reply is not a valid verdict: {problems}") from exc
    got = [r.id for r in verdict.rubric]
    if sorted(got) != sorted(rubric_ids):
        raise ValueError(
            f"the rubric list must answer exactly {rubric_ids or 'no items'}, it answered {got}"
        )
    return verdict


class Judge:
    """Judges episodes with one pinned model, one prompt version and one rubric version."""

    def __init__(
        self,
        provider: Provider,
        *,
        rubric: Rubric | None = None,
        prompt: PromptTemplate | None = None,
        cache: JudgeCache | None = None,
        use_cache: bool = True,
        tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS,
        max_tokens: int = 4096,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.provider = provider
        self.rubric = rubric or load_rubric()
        self.prompt = prompt or load_prompt()
        self.cache = (cache or JudgeCache()) if use_cache else None
        self.tool_output_chars = tool_output_chars
        self.max_tokens = max_tokens
        self.retry = retry or RetryPolicy(max_attempts=3)
        self.calibration = calibration_summary(self.rubric.version, self.model)
        """Agreement of this model on this rubric, when a calibration report exists."""

    @property
    def model(self) -> str:
        """``provider:model`` of the pinned judge model."""
        return f"{self.provider.name}:{self.provider.model}"

    def describe(self) -> dict[str, Any]:
        """The judge as recorded in grades and the run manifest (with its calibration
        agreement when ``dabench judge calibrate`` was run for this model and rubric)."""
        described: dict[str, Any] = {
            "model": self.model,
            "temperature": JUDGE_TEMPERATURE,
            "prompt_version": self.prompt.version,
            "rubric_version": self.rubric.version,
            "tool_output_chars": self.tool_output_chars,
        }
        if self.calibration is not None:
            described["calibration"] = self.calibration
        return described

    def key(self, inp: JudgeInput) -> str:
        """The cache key of a judgement."""
        return cache_key(
            {
                "model": self.model,
                "prompt_version": self.prompt.version,
                "rubric_version": self.rubric.version,
                "input": inp.model_dump(),
            }
        )

    def render(self, inp: JudgeInput) -> str:
        """The full prompt for ``inp``."""
        items = "\n".join(self.rubric.item(i).render() for i in inp.rubric_items)
        return self.prompt.render(inp, items)

    async def _complete(self, messages: list[ChatMessage]) -> ModelResponse:
        return await self.provider.complete(
            list(messages),
            system=SYSTEM_PROMPT,
            tools=[],
            max_tokens=self.max_tokens,
            temperature=JUDGE_TEMPERATURE,
        )

    async def judge(self, inp: JudgeInput, *, use_cache: bool = True) -> JudgeResult:
        """Judge one input; cached unless ``use_cache`` is False (e.g. variance runs)."""
        key = self.key(inp)
        if use_cache and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                verdict = JudgeVerdict.model_validate_json(hit)
                return JudgeResult(verdict=verdict, key=key, cached=True, attempts=0)
        messages = [ChatMessage(role="user", content=self.render(inp))]
        cost: float | None = None
        error = ""
        for attempt in (1, 2):
            try:
                response = await with_retries(partial(self._complete, list(messages)), self.retry)
            except ProviderError as exc:
                raise JudgeError(f"judge {self.model} failed: {exc}") from exc
            if response.cost_usd is not None:
                cost = (cost or 0.0) + response.cost_usd
            try:
                verdict = parse_verdict(response.text, list(inp.rubric_items))
            except ValueError as exc:
                error = str(exc)
                messages += [
                    ChatMessage(role="assistant", content=response.text),
                    ChatMessage(
                        role="user",
                        content=f"{error}. Reply again with the corrected JSON object only.",
                    ),
                ]
                continue
            if self.cache is not None:
                self.cache.put(key, verdict.model_dump_json())
            return JudgeResult(
                verdict=verdict, key=key, cached=False, attempts=attempt, cost_usd=cost
            )
        raise JudgeError(f"judge {self.model} returned an invalid verdict twice: {error}")


def verdict_summary(result: JudgeResult, judge: Judge) -> dict[str, Any]:
    """The ``Grade.judge`` dict: the verdict plus model, versions, cache key and cost."""
    return {
        **judge.describe(),
        "cache_key": result.key,
        "cached": result.cached,
        "attempts": result.attempts,
        "cost_usd": result.cost_usd,
        **json.loads(result.verdict.model_dump_json()),
    }
