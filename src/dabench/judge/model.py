"""The judge's structured verdict: atomic claims, format and instruction-following scores,
and rubric items. Validated with pydantic; an invalid verdict is retried once."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Centrality = Literal["central", "peripheral"]
"""``central``: essential to answer the question (the number, the name, the key fact);
``peripheral``: context, formatting notes, general advice."""
Correctness = Literal["correct", "contradicted", "unverifiable"]
"""Against the ground truth: agrees, disagrees, or the truth does not cover the claim."""
Groundedness = Literal["grounded", "partial", "ungrounded"]
"""Against the actual tool outputs: supported, partly supported, or not supported at all."""
Severity = Literal["critical", "major", "minor"]
"""How bad a contradicted or ungrounded claim is: critical (wrong number/name/state that could
cause a wrong decision), major (significant but less impactful), minor (rounding, paraphrase)."""


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Claim(_Verdict):
    """One atomic claim of the answer with its verdicts."""

    text: str = Field(min_length=1)
    centrality: Centrality
    correctness: Correctness
    groundedness: Groundedness
    severity: Severity | None = None
    """Required when the claim is contradicted or ungrounded; ignored otherwise."""
    explanation: str = ""

    @model_validator(mode="after")
    def _severity_when_wrong(self) -> Claim:
        wrong = self.correctness == "contradicted" or self.groundedness == "ungrounded"
        if wrong and self.severity is None:
            raise ValueError(
                f"claim {self.text[:60]!r} is {self.correctness}/{self.groundedness} "
                "but has no severity (critical, major or minor)"
            )
        return self


class RubricVerdict(_Verdict):
    """A yes/no verdict on one rubric item, with a reason."""

    id: str
    verdict: Literal["yes", "no"]
    reason: str = ""


class JudgeVerdict(_Verdict):
    """Everything the judge returns for one episode."""

    claims: list[Claim]
    format_score: int = Field(ge=0, le=10)
    """Is the answer well structured for what was asked (0-10)?"""
    instruction_following_score: int = Field(ge=0, le=10)
    """Did the answer respect the question's explicit constraints (0-10)?"""
    rubric: list[RubricVerdict] = Field(default_factory=list)
    reasoning: str = ""
