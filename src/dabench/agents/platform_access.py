"""Agents that hand the reference platform's MCP endpoint to a program (``command``,
``claude-cli``) find the episode's view of the platform behind an arm's target here."""

from __future__ import annotations

from dabench.errors import HarnessError
from dabench.targets.base import Target
from dabench.targets.reference_episode import ReferenceEpisode


def reference_of(target: Target, kind: str) -> tuple[ReferenceEpisode, str]:
    """The episode's view of the reference platform behind ``target`` (its keys are bound to
    the episode) and the identity to act as (a protocol step's identity-bound view wraps
    it); agents that hand the platform's MCP endpoint to a program need it."""
    identity = "default"
    seen = target
    while not isinstance(seen, ReferenceEpisode):
        inner = getattr(seen, "inner", None)
        if not isinstance(inner, Target):
            raise HarnessError(
                f"agent kind {kind!r} needs a reference platform target bound to the episode "
                f"(the runner's Target.begin_episode), not {target.label!r}"
            )
        identity = str(getattr(seen, "identity", identity))
        seen = inner
    return seen, identity
