"""Tool-use checks from the episode's own tool calls: overlap with the expected tools (by
role, see :mod:`dabench.grading.tool_equivalents`) and the tool error rate."""

from __future__ import annotations

from collections.abc import Sequence

from dabench.grading.tool_equivalents import call_roles, met_expected_tools
from dabench.journal.records import Episode, GradeCheck
from dabench.roles import ToolRoles, reference_role


def check_tool_overlap(
    episode: Episode, expected_tools: Sequence[str], roles: ToolRoles | None = None
) -> GradeCheck:
    """Pass when at least one expected tool was met: a call whose tool plays the expected
    reference tool's role on the arm's target (``roles``: the arm's map, for calls recorded
    without roles), or a call of the expected tool itself for tools without a role (errors
    included; extra tools are not penalised: overlap, not F1, as in seed 003)."""
    used = sorted({call.name for call in episode.tool_calls})
    hit = met_expected_tools(episode.tool_calls, expected_tools, roles)
    if hit:
        words = []
        for tool in hit:
            role = reference_role(tool)
            by = sorted({c.name for c in episode.tool_calls if role in call_roles(c, roles)})
            words.append(f"{tool} (role {role}: {', '.join(by)})" if role else tool)
        reason = f"used expected tool(s) {'; '.join(words)}"
    else:
        wanted = [f"{t} (role {r})" if (r := reference_role(t)) else t for t in expected_tools]
        reason = f"used none of the expected tools {', '.join(wanted)}"
        reason += f" (used: {', '.join(used) or 'no tools'})"
    return GradeCheck(
        name="tool_overlap",
        passed=bool(hit),
        reason=reason,
        expected=list(expected_tools),
        found=used,
    )


def error_rate_score(episode: Episode) -> float:
    """``1 - failed tool calls / tool calls``; 1.0 when no tool was called."""
    calls = episode.tool_calls
    if not calls:
        return 1.0
    return 1.0 - sum(1 for c in calls if c.is_error) / len(calls)
