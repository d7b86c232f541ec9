"""The S5 lifecycle funnel: per arm, how many protocol episodes pass each step."""

from __future__ import annotations

from dabench.stats.frame import EpisodeBrief, EpisodeFrame
from dabench.stats.model import FunnelStep

STEP_ORDER = ("teach", "recall", "promote", "transfer", "supersede", "abstain")
"""Canonical order of the named lifecycle steps, used to break ties between steps that stand at
the same position in different protocols."""


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
        names = _stage_order(protocol, {st.name for _, st in judged})
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


def _stage_order(protocol: list[EpisodeBrief], names: set[str]) -> list[str]:
    """Funnel stages in the order the protocols play them (earliest position first), so a
    verify step stands right after the step it checks; ties follow ``STEP_ORDER``."""
    first: dict[str, int] = {}
    for ep in protocol:
        for pos, st in enumerate(ep.steps):
            if st.name in names:
                first[st.name] = min(pos, first.get(st.name, pos))

    def key(name: str) -> tuple[int, int, str]:
        canon = STEP_ORDER.index(name) if name in STEP_ORDER else len(STEP_ORDER)
        return (first[name], canon, name)

    return sorted(names, key=key)
