"""Report helpers behind the honest-report rules: truth precision, verdicts, colours."""

from __future__ import annotations

from dabench.report.context import ARM_PALETTE, arm_color, score_label
from dabench.report.episodes import truth_with_precision
from dabench.report.fmt import NA, pct, verdict_words
from dabench.stats.model import Interval


def test_truth_is_never_rounded_for_display() -> None:
    text = truth_with_precision(672281.83, (0.0, 0.005))
    assert text == (
        "672281.83 (full precision; accepted within ± 3361.41: the larger of absolute 0 and "
        "relative 0.005)"
    )
    assert truth_with_precision(42.0, None) == "42 (full precision)"


def test_verdict_words_and_na() -> None:
    assert verdict_words(Interval(estimate=0.2, low=0.1, high=0.3)) == "better (95% CI above 0)"
    assert verdict_words(Interval(estimate=-0.2, low=-0.3, high=-0.1)) == ("worse (95% CI below 0)")
    assert verdict_words(Interval(estimate=0.0, low=-0.1, high=0.1)).startswith(
        "no significant difference"
    )
    assert verdict_words(Interval()) == NA == pct(None) == "n/a"


def test_arm_colour_and_score_names() -> None:
    assert arm_color("a2") == ARM_PALETTE[2] and arm_color("a0") == ARM_PALETTE[0]
    assert arm_color("kibana-gpt") == arm_color("kibana-gpt") in ARM_PALETTE
    assert score_label("error_rate") == "error-free tool calls"
    assert score_label("latency") == "speed score"
