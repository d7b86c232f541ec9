"""Tool-use checks from the episode's own tool calls: overlap with the expected tools and the
tool error rate."""

from __future__ import annotations

from collections.abc import Sequence

from dabench.grading.tool_equivalents import accepted_tools
from dabench.journal.records import Episode, GradeCheck


def check_tool_overlap(episode: Episode, expected_tools: Sequence[str]) -> GradeCheck:
    """Pass when at least one expected tool (or an equivalent of another stack, see
    :data:`~dabench.grading.tool_equivalents.TOOL_EQUIVALENTS`) was called (errors included;
    extra tools are not penalised: overlap, not F1, as in seed 003)."""
    used = sorted({call.name for call in episode.tool_calls})
    hit = sorted(set(used) & accepted_tools(expected_tools))
    if hit:
        reason = f"used expected tool(s) {', '.join(hit)}"
    else:
        reason = f"used none of the expected tools {', '.join(expected_tools)}"
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
