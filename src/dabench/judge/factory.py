"""Build a :class:`~dabench.judge.judge.Judge` from a ``provider:model`` spec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dabench.judge.cache import JudgeCache
from dabench.judge.judge import Judge
from dabench.judge.prompt import DEFAULT_PROMPT_VERSION, DEFAULT_TOOL_OUTPUT_CHARS, load_prompt
from dabench.judge.rubric import DEFAULT_RUBRIC_VERSION, load_rubric
from dabench.providers import make_provider


def make_judge(
    spec: str,
    *,
    base_url: str | None = None,
    cache_dir: Path | None = None,
    use_cache: bool = True,
    rubric: str | Path = DEFAULT_RUBRIC_VERSION,
    prompt: str | Path = DEFAULT_PROMPT_VERSION,
    tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS,
    **provider_settings: Any,
) -> Judge:
    """A judge over ``make_provider(spec)`` (e.g. ``openai:gpt-4.1``, ``anthropic:...``)."""
    if base_url is not None:
        provider_settings["base_url"] = base_url
    provider = make_provider(spec, **provider_settings)
    return Judge(
        provider,
        rubric=load_rubric(rubric),
        prompt=load_prompt(prompt),
        cache=JudgeCache(cache_dir) if use_cache else None,
        use_cache=use_cache,
        tool_output_chars=tool_output_chars,
    )
