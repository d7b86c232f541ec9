"""Agents that hand the reference platform's MCP endpoint to a program (``command``,
``claude-cli``) find the platform behind an arm's target here."""

from __future__ import annotations

from dabench.errors import HarnessError
from dabench.targets.base import Target
from dabench.targets.reference import ReferenceTarget


def reference_of(target: Target, kind: str) -> tuple[ReferenceTarget, str]:
    """The reference target behind ``target`` and the identity to act as (a protocol step's
    identity-bound view wraps the arm's target); agents that hand the platform's MCP endpoint
    to a program need it."""
    identity = "default"
    seen = target
    while not isinstance(seen, ReferenceTarget):
        inner = getattr(seen, "inner", None)
        if not isinstance(inner, Target):
            raise HarnessError(
                f"agent kind {kind!r} needs a reference platform target, not {target.label!r}"
            )
        identity = str(getattr(seen, "identity", identity))
        seen = inner
    return seen, identity
