"""The judge prompt: a versioned template file and the inputs rendered into it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from dabench.defaults import DEFAULT_TOOL_OUTPUT_CHARS as DEFAULT_TOOL_OUTPUT_CHARS
from dabench.errors import UserInputError
from dabench.journal.records import ToolCall
from dabench.judge.versioned import versioned_file

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"
DEFAULT_PROMPT_VERSION = "claims_v1"

_FIELDS = ("question", "ground_truth", "exact_answer", "tool_outputs", "answer", "rubric_items")
_PLACEHOLDER_RE = re.compile(r"\{(" + "|".join(_FIELDS) + r")\}")


class JudgeInput(BaseModel):
    """Everything the judge sees about one episode (also the cache key's content)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str
    ground_truth: str
    exact_answer: str = "(none)"
    tool_outputs: str = "(no tool calls)"
    answer: str
    rubric_items: list[str] = []
    """Rubric item ids to answer."""


@dataclass(frozen=True)
class PromptTemplate:
    """A versioned prompt file: YAML front matter with ``version``, then the template."""

    version: str
    text: str

    def render(self, inp: JudgeInput, rubric_text: str) -> str:
        """Fill the placeholders in one pass (inputs containing braces are left alone)."""
        values = inp.model_dump()
        values["rubric_items"] = rubric_text or "(none: return an empty rubric list)"
        return _PLACEHOLDER_RE.sub(lambda m: str(values[m.group(1)]), self.text)


def load_prompt(version_or_path: str | Path = DEFAULT_PROMPT_VERSION) -> PromptTemplate:
    """Load a shipped prompt version (``claims_v1``) or a prompt file."""
    path = versioned_file(version_or_path, PROMPT_DIR, ".md", "judge prompt")
    raw = path.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n", raw, re.DOTALL)
    if not match:
        raise UserInputError(f"{path}:1: expected YAML front matter with 'version'")
    meta = yaml.safe_load(match.group(1)) or {}
    version = meta.get("version") if isinstance(meta, dict) else None
    if not isinstance(version, str):
        raise UserInputError(f"{path}:2: front matter needs 'version: <string>'")
    return PromptTemplate(version=version, text=raw[match.end() :])


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a notice saying how much was cut."""
    if len(text) <= limit:
        return text
    return (
        text[:limit] + f"\n[... truncated: showing the first {limit:,} of {len(text):,} characters "
        "of tool output]"
    )


def render_tool_outputs(calls: list[ToolCall], limit: int = DEFAULT_TOOL_OUTPUT_CHARS) -> str:
    """The episode's tool calls and results as the judge sees them, truncated to ``limit``."""
    if not calls:
        return "(no tool calls)"
    parts = []
    for call in calls:
        args = json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)
        status = " [error]" if call.is_error else ""
        parts.append(f"### [{call.index}] {call.name}({args}){status}\n{call.result}")
    return truncate("\n\n".join(parts), limit)
