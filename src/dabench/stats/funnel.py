"""The S5 lifecycle funnel: per arm, how many protocol episodes pass each step."""

from __future__ import annotations

from dabench.stats.frame import EpisodeFrame
from dabench.stats.model import FunnelStep

STEP_ORDER = ("teach", "recall", "promote", "transfer", "supersede", "abstain")
"""Canonical order of protocol steps; other step names follow in first-seen order."""


def lifecycle_funnel(frame: EpisodeFrame) -> dict[str, list[FunnelStep]]:
    """Per arm with protocol episodes: attempts, passes and cumulative survivors per step."""
    out: dict[str, list[FunnelStep]] = {}
    for code, arm in enumerate(frame.arms):
        protocol = [
            ep
            for ep, a, harness in zip(frame.episodes, frame.arm, frame.harness, strict=True)
            if a == code and ep.steps and not harness
        ]
        if not protocol:
            continue
        # Steps without a verdict (an ungraded teach, checked by a later verify) are not stages.
        judged = [(ep, st) for ep in protocol for st in ep.steps if st.passed is not None]
        names = [s for s in STEP_ORDER if any(st.name == s for _, st in judged)]
        for _, st in judged:
            if st.name not in names:
                names.append(st.name)
        steps: list[FunnelStep] = []
        alive = {ep.key for ep in protocol}
        for name in names:
            ran = [(ep, st) for ep, st in judged if st.name == name]
            passed = {ep.key for ep, st in ran if st.passed}
            ran_keys = {ep.key for ep, _ in ran}
            # Protocols without this step do not lose survivors here.
            alive = {key for key in alive if key in passed or key not in ran_keys}
            steps.append(
                FunnelStep(
                    name=name,
                    episodes=len(ran_keys),
                    passed=len(passed),
                    pass_rate=len(passed) / len(ran_keys) if ran_keys else None,
                    reached=len(alive & ran_keys),
                )
            )
        out[arm] = steps
    return out
