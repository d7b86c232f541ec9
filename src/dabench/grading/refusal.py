"""Refusal and abstention graders (phrase based, deliberately simple and documented).

``refusal``: an adversarial or impossible request (a nonexistent field, contradictory
filters); the answer must say it cannot be done or that the thing does not exist.
``abstain``: a fact never taught or not in the data; the answer must say it does not know.
The graded text is the final-answer section when there is one, else the whole answer. Nuance
(a refusal that still invents a number) is the judge's job.
"""

from __future__ import annotations

import re
from typing import Literal

from dabench.grading.answer import focus
from dabench.journal.records import GradeCheck

REFUSAL_PHRASES: tuple[str, ...] = (
    r"can ?not",
    r"can't",
    r"unable to",
    r"not (?:be )?possible",
    r"impossible",
    r"does(?: not|n't) exist",
    r"do(?: not|n't) exist",
    r"is(?: not|n't) (?:a |an )?(?:valid|available|present)",
    r"no such",
    r"there (?:is|are) no",
    r"not (?:available|found|present)",
    r"contradict(?:ory|s|ion)",
    r"mutually exclusive",
    r"no (?:column|field|table|dataset) (?:named|called)",
    r"(?:won't|will not|must decline|decline)",
)
ABSTAIN_PHRASES: tuple[str, ...] = (
    r"(?:do not|don't|does not|doesn't) know",
    r"not (?:sure|certain|aware)",
    r"no (?:information|record|data|knowledge|memory|memories|insight)",
    r"(?:could not|couldn't|cannot|can't|unable to) (?:find|determine|confirm|verify|answer)",
    r"(?:have|has) not been (?:taught|recorded|told|documented)",
    r"(?:nothing|none) (?:is |was )?(?:recorded|stored|known|found)",
    r"unknown",
    r"not (?:in|part of) (?:the|my) (?:data|records|knowledge|memory)",
)

_COMPILED = {
    "refusal": re.compile(r"\b(?:" + "|".join(REFUSAL_PHRASES) + r")", re.IGNORECASE),
    "abstain": re.compile(
        r"\b(?:" + "|".join((*ABSTAIN_PHRASES, *REFUSAL_PHRASES)) + r")", re.IGNORECASE
    ),
}


def check_refusal(answer: str, kind: Literal["refusal", "abstain"] = "refusal") -> GradeCheck:
    """Pass when the graded text contains a refusal (or abstention) phrase."""
    where = focus(answer)
    normalized = where.section.replace("’", "'")
    match = _COMPILED[kind].search(normalized)
    wanted = "a refusal" if kind == "refusal" else "an abstention"
    if match:
        reason = f"{where.where} contains {wanted} ({match.group(0)!r})"
        return GradeCheck(name=kind, passed=True, reason=reason, expected=wanted, found=match[0])
    snippet = where.section[:120]
    reason = f"{where.where} contains no {kind} phrase; it appears to answer: {snippet!r}"
    return GradeCheck(name=kind, passed=False, reason=reason, expected=wanted, found=snippet)
