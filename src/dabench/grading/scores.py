"""Per-episode scores and the arm-level formulas helper F applies (all values 0..1).

Every constant here is documented in docs/grading.md with a worked example.

Claims (from the judge):

- correctness of a claim (against the ground truth):

  ============  =======  ============  =====  =====  ========
  centrality    correct  unverifiable  minor  major  critical
  ============  =======  ============  =====  =====  ========
  central       1.0      0.75          0.5    0.25   0.0
  peripheral    1.0      1.0           0.75   0.5    0.25
  ============  =======  ============  =====  =====  ========

  (minor/major/critical are the severities of a *contradicted* claim). The episode's
  correctness is the **geometric mean** over claims, so one central critical error makes it
  0; peripheral claims never reach 0, so no epsilon is needed. No claims -> 0.
- groundedness of a claim (against the tool outputs): grounded 1.0, partial 0.5,
  ungrounded minor 0.25 / major 0.1 / critical 0.0; the episode's groundedness is the
  **arithmetic mean**. No claims -> 0.
- relevance = central claims / all claims.

Programmatic: latency and cost scores interpolate linearly between a good and a bad threshold
(latency <= 5 s -> 1, >= 120 s -> 0; cost <= $0.001 -> 1, >= $0.10 -> 0; unknown cost ->
absent), error_rate = 1 - failed tool calls / tool calls, tool = 1 when an expected tool was used.

Overall = weighted mean of the scores present, weights renormalised over those present
(:data:`DEFAULT_WEIGHTS`). Without a judge, ``correctness`` is the deterministic verdict
(1 passed / 0 failed) and the judge-only scores are absent. A failed episode (timeout,
budget exhausted, no answer) has overall 0.

Per arm (helper F): :func:`difficulty_weighted_mean` of the episodes' overall with
:data:`~dabench.tasks.model.DIFFICULTY_WEIGHT`, times ``1 - failure_penalty``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from dabench.fields import FiniteNonNegative, Seconds
from dabench.judge.model import Claim
from dabench.tasks.model import DIFFICULTY_WEIGHT

CORRECTNESS_VALUE: dict[str, dict[str, float]] = {
    "central": {"correct": 1.0, "unverifiable": 0.75, "minor": 0.5, "major": 0.25, "critical": 0.0},
    "peripheral": {
        "correct": 1.0,
        "unverifiable": 1.0,
        "minor": 0.75,
        "major": 0.5,
        "critical": 0.25,
    },
}
"""Claim correctness value by centrality, then verdict (or severity when contradicted)."""

GROUNDEDNESS_VALUE: dict[str, float] = {
    "grounded": 1.0,
    "partial": 0.5,
    "minor": 0.25,
    "major": 0.1,
    "critical": 0.0,
}
"""Claim groundedness value by verdict (or severity when ungrounded)."""

DEFAULT_WEIGHTS: dict[str, float] = {
    "correctness": 0.35,
    "groundedness": 0.15,
    "instruction_following": 0.10,
    "tool": 0.10,
    "relevance": 0.05,
    "format": 0.05,
    "rubric": 0.05,
    "latency": 0.05,
    "cost": 0.05,
    "error_rate": 0.05,
}
"""Weights of the per-episode overall (they sum to 1; renormalised over present scores)."""

FAILURE_STATUSES: frozenset[str] = frozenset({"timeout", "budget_exhausted", "no_answer"})
"""Episode statuses that are model failures (harness errors are excluded, not failures)."""

DEFAULT_PENALTY_FACTOR = 0.5
"""Failure penalty per unit of failure rate: 10 % failed episodes cost 5 % of the score."""


class ScoreConfig(BaseModel):
    """Configurable thresholds and weights of the per-episode scores."""

    model_config = ConfigDict(extra="forbid")

    weights: dict[str, FiniteNonNegative] = Field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    latency_good_s: Seconds = 5.0
    latency_bad_s: Seconds = 120.0
    cost_good_usd: FiniteNonNegative = 0.001
    cost_bad_usd: FiniteNonNegative = 0.10
    judge_pass_threshold: float = Field(default=0.75, ge=0.0, le=1.0)
    """A ``judge``-kind task passes when its correctness is at least this."""
    penalty_factor: FiniteNonNegative = DEFAULT_PENALTY_FACTOR


def claim_correctness(claim: Claim) -> float:
    """The correctness value of one claim (see :data:`CORRECTNESS_VALUE`)."""
    table = CORRECTNESS_VALUE[claim.centrality]
    if claim.correctness == "contradicted":
        return table[claim.severity or "critical"]
    return table[claim.correctness]


def claim_groundedness(claim: Claim) -> float:
    """The groundedness value of one claim (see :data:`GROUNDEDNESS_VALUE`)."""
    if claim.groundedness == "ungrounded":
        return GROUNDEDNESS_VALUE[claim.severity or "critical"]
    return GROUNDEDNESS_VALUE[claim.groundedness]


def geometric_mean(values: Sequence[float]) -> float:
    """Geometric mean; any zero gives 0; empty gives 0."""
    if not values or any(v <= 0.0 for v in values):
        return 0.0
    return math.exp(sum(math.log(v) for v in values) / len(values))


def correctness_score(claims: Sequence[Claim]) -> float:
    """Geometric mean of the claims' correctness values."""
    return geometric_mean([claim_correctness(c) for c in claims])


def groundedness_score(claims: Sequence[Claim]) -> float:
    """Arithmetic mean of the claims' groundedness values (0 without claims)."""
    if not claims:
        return 0.0
    return sum(claim_groundedness(c) for c in claims) / len(claims)


def relevance_score(claims: Sequence[Claim]) -> float:
    """Central claims / all claims (0 without claims)."""
    if not claims:
        return 0.0
    return sum(1 for c in claims if c.centrality == "central") / len(claims)


def interpolate(value: float, good: float, bad: float) -> float:
    """1 at or below ``good``, 0 at or above ``bad``, linear in between."""
    if value <= good:
        return 1.0
    if value >= bad:
        return 0.0
    return (bad - value) / (bad - good)


def latency_score(wall_ms: float, config: ScoreConfig) -> float:
    """Latency score from the episode's wall clock."""
    return interpolate(wall_ms / 1000.0, config.latency_good_s, config.latency_bad_s)


def cost_score(cost_usd: float | None, config: ScoreConfig) -> float | None:
    """Cost score, or ``None`` when the cost is unknown."""
    if cost_usd is None:
        return None
    return interpolate(cost_usd, config.cost_good_usd, config.cost_bad_usd)


def weighted_overall(scores: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Weighted mean of the scores that have a weight, weights renormalised over them."""
    present = [(scores[k], w) for k, w in weights.items() if k in scores and w > 0]
    total = sum(w for _, w in present)
    if total <= 0:
        return 0.0
    return sum(s * w for s, w in present) / total


def failure_penalty(failures: int, total: int, *, factor: float = DEFAULT_PENALTY_FACTOR) -> float:
    """The fraction taken off an arm's score: ``factor * failures / total`` (0 when total is 0).

    ``failures`` counts episodes whose status is in :data:`FAILURE_STATUSES`; ``total``
    counts the arm's episodes that are not excluded (harness errors are in neither).
    """
    if total <= 0:
        return 0.0
    return factor * failures / total


def difficulty_weighted_mean(items: Iterable[tuple[float, str]]) -> float:
    """``sum(w[d] * s) / sum(w[d])`` over (overall score, difficulty) pairs, with
    :data:`DIFFICULTY_WEIGHT` (easy 0.7, medium 1.0, hard 1.3, expert 1.6); 0 when empty."""
    pairs = [(score, DIFFICULTY_WEIGHT[difficulty]) for score, difficulty in items]
    total = sum(w for _, w in pairs)
    return sum(s * w for s, w in pairs) / total if total else 0.0


def adjusted_overall(
    items: Iterable[tuple[float, str]],
    failures: int,
    total: int,
    *,
    factor: float = DEFAULT_PENALTY_FACTOR,
) -> float:
    """An arm's adjusted overall: ``difficulty_weighted_mean(items) * (1 - failure_penalty)``.

    ``items`` are the (overall, difficulty) pairs of the arm's non-excluded episodes, failed
    ones included with overall 0.
    """
    return difficulty_weighted_mean(items) * (1.0 - failure_penalty(failures, total, factor=factor))
