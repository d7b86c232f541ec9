"""A scripted OpenAI-compatible judge server on loopback (built on D's WireServer)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tests.providers.servers import RecordedRequest, Reply, WireServer, openai_completion

Decide = Callable[[str, str], str]
"""(rubric item id, answer text) -> "yes" | "no"."""


def prompt_of(request: RecordedRequest) -> str:
    """The first user message of a chat-completions request (the rendered judge prompt)."""
    for message in request.body["messages"]:
        if message["role"] == "user":
            return str(message["content"])
    raise AssertionError("no user message")


def answer_of(prompt: str) -> str:
    match = re.search(r"## ANSWER\n(.*?)\n\n## RUBRIC ITEMS", prompt, re.DOTALL)
    assert match, "prompt has no ANSWER section"
    return match.group(1)


def rubric_ids_of(prompt: str) -> list[str]:
    return re.findall(r"^- id: (\S+)", prompt, re.MULTILINE)


def verdict(
    rubric: dict[str, str] | None = None,
    *,
    claims: list[dict[str, Any]] | None = None,
    format_score: int = 8,
    instruction_following_score: int = 9,
) -> str:
    """A verdict JSON string."""
    return json.dumps(
        {
            "claims": claims
            if claims is not None
            else [
                {
                    "text": "the answer",
                    "centrality": "central",
                    "correctness": "correct",
                    "groundedness": "grounded",
                    "severity": None,
                    "explanation": "matches",
                }
            ],
            "format_score": format_score,
            "instruction_following_score": instruction_following_score,
            "rubric": [
                {"id": rid, "verdict": v, "reason": "scripted"} for rid, v in (rubric or {}).items()
            ],
            "reasoning": "scripted judge",
        }
    )


class ScriptedJudgeServer(WireServer):
    """Answers every judge prompt with a verdict whose rubric labels come from ``decide``."""

    def __init__(self) -> None:
        self.decide: Decide = lambda _rid, _answer: "yes"
        self.claims: list[dict[str, Any]] | None = None
        super().__init__(default=self._respond)

    def _respond(self, request: RecordedRequest) -> Reply:
        prompt = prompt_of(request)
        answer = answer_of(prompt)
        labels = {rid: self.decide(rid, answer) for rid in rubric_ids_of(prompt)}
        text = verdict(labels, claims=self.claims)
        return Reply(body=openai_completion(text, model="judge-1", cost=0.0001))
