"""The claim scoring math, interpolation, overall, failure penalty and adjusted overall."""

from __future__ import annotations

import math

import pytest

from dabench.grading.scores import (
    DEFAULT_WEIGHTS,
    ScoreConfig,
    adjusted_overall,
    claim_correctness,
    correctness_score,
    cost_score,
    difficulty_weighted_mean,
    failure_penalty,
    groundedness_score,
    interpolate,
    latency_score,
    relevance_score,
    weighted_overall,
)
from dabench.judge.model import Claim


def claim(
    centrality: str, correctness: str, groundedness: str, severity: str | None = None
) -> Claim:
    return Claim.model_validate(
        {
            "text": "c",
            "centrality": centrality,
            "correctness": correctness,
            "groundedness": groundedness,
            "severity": severity,
        }
    )


WORKED = [
    claim("central", "correct", "grounded"),
    claim("central", "contradicted", "grounded", "minor"),
    claim("peripheral", "correct", "ungrounded", "major"),
]


def test_worked_example_from_docs() -> None:
    assert correctness_score(WORKED) == pytest.approx(0.5 ** (1 / 3))  # 0.7937
    assert groundedness_score(WORKED) == pytest.approx(2.1 / 3)  # 0.70
    assert relevance_score(WORKED) == pytest.approx(2 / 3)


def test_one_central_critical_error_zeroes_correctness() -> None:
    claims = [claim("central", "correct", "grounded")] * 5 + [
        claim("central", "contradicted", "grounded", "critical")
    ]
    assert correctness_score(claims) == 0.0


def test_peripheral_critical_does_not_zero() -> None:
    claims = [
        claim("central", "correct", "grounded"),
        claim("peripheral", "contradicted", "grounded", "critical"),
    ]
    assert correctness_score(claims) == pytest.approx(math.sqrt(0.25))


@pytest.mark.parametrize(
    ("centrality", "verdict", "severity", "value"),
    [
        ("central", "correct", None, 1.0),
        ("central", "unverifiable", None, 0.75),
        ("central", "contradicted", "minor", 0.5),
        ("central", "contradicted", "major", 0.25),
        ("central", "contradicted", "critical", 0.0),
        ("peripheral", "unverifiable", None, 1.0),
        ("peripheral", "contradicted", "minor", 0.75),
        ("peripheral", "contradicted", "major", 0.5),
        ("peripheral", "contradicted", "critical", 0.25),
    ],
)
def test_claim_values(centrality: str, verdict: str, severity: str | None, value: float) -> None:
    assert claim_correctness(claim(centrality, verdict, "grounded", severity)) == value


def test_severity_required_when_wrong() -> None:
    with pytest.raises(ValueError, match="no severity"):
        claim("central", "contradicted", "grounded")
    with pytest.raises(ValueError, match="no severity"):
        claim("central", "correct", "ungrounded")


def test_empty_claims() -> None:
    assert correctness_score([]) == 0.0
    assert groundedness_score([]) == 0.0
    assert relevance_score([]) == 0.0


def test_interpolation_thresholds() -> None:
    cfg = ScoreConfig()
    assert latency_score(5_000, cfg) == 1.0
    assert latency_score(120_000, cfg) == 0.0
    assert latency_score(62_500, cfg) == pytest.approx(0.5)
    assert cost_score(None, cfg) is None
    assert cost_score(0.0005, cfg) == 1.0
    assert cost_score(0.0505, cfg) == pytest.approx(0.5)
    assert interpolate(200, 5, 120) == 0.0


def test_weighted_overall_renormalises_over_present() -> None:
    assert sum(DEFAULT_WEIGHTS.values()) == pytest.approx(1.0)
    assert weighted_overall({"correctness": 1.0, "latency": 0.0}, DEFAULT_WEIGHTS) == pytest.approx(
        0.35 / 0.40
    )
    assert weighted_overall({}, DEFAULT_WEIGHTS) == 0.0
    assert weighted_overall({"unknown": 1.0}, DEFAULT_WEIGHTS) == 0.0


def test_failure_penalty_and_adjusted_overall() -> None:
    assert failure_penalty(0, 0) == 0.0
    assert failure_penalty(3, 30) == pytest.approx(0.05)
    assert failure_penalty(3, 30, factor=1.0) == pytest.approx(0.1)
    items = [(1.0, "easy"), (0.5, "expert"), (0.0, "medium")]
    mean = (0.7 * 1.0 + 1.6 * 0.5 + 1.0 * 0.0) / (0.7 + 1.6 + 1.0)
    assert difficulty_weighted_mean(items) == pytest.approx(mean)
    assert adjusted_overall(items, 1, 3) == pytest.approx(mean * (1 - 0.5 / 3))
    assert difficulty_weighted_mean([]) == 0.0
