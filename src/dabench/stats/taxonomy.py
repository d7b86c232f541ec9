"""Per-episode tool traces and the failure taxonomy.

Every episode gets exactly one class, checked in this order (the first that applies):

``harness_error`` (ours, excluded) > ``ungraded`` > ``passed`` > ``timeout`` >
``gate_refusal_loop`` (>= 3 gate refusals such as ``SEARCH_REQUIRED``) > ``budget_exhausted``
> ``no_final_answer`` > ``tool_error`` (a tool whose last call failed) > ``wrong_answer``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dabench.journal.records import Episode, ToolCall

GATE_ERROR_CODES: frozenset[str] = frozenset({"SEARCH_REQUIRED"})
"""Error codes with which a platform gate refuses a call (the search-first gate)."""
GATE_LOOP_MIN = 3
"""Gate refusals in one episode from which a failure is a gate refusal loop."""

_SORTED_JSON = json.JSONEncoder(sort_keys=True)
"""What ``json.dumps(value, sort_keys=True)`` uses, built once (``json.dumps`` builds a new
encoder on every call that sets an option)."""


@dataclass(frozen=True)
class ToolTrace:
    """What an episode's tool calls tell statistics."""

    calls: int
    errors: int
    gate_errors: int
    retries: int
    """Calls of a tool whose previous call failed."""
    unrecovered_error: bool
    """Some tool's last call failed."""
    names: frozenset[str]
    fast_path_used: bool
    """A call's arguments named one of the task's fast-path datasets."""


def episode_calls(episode: Episode) -> list[ToolCall]:
    """The episode's tool calls, including those made inside protocol steps (S5)."""
    calls = list(episode.tool_calls)
    for step in episode.steps:
        calls.extend(step.tool_calls)
    return calls


def is_gate_error(call: ToolCall) -> bool:
    """True when the call was refused by a platform gate."""
    return call.is_error and (call.error_code or "") in GATE_ERROR_CODES


def tool_trace(calls: Sequence[ToolCall], fast_path: Iterable[str] = ()) -> ToolTrace:
    """Summarise tool calls: errors, gate refusals, retries, fast-path use."""
    pending: set[str] = set()
    errors = gate = retries = 0
    for call in calls:
        if call.name in pending:
            retries += 1
        if call.is_error:
            errors += 1
            gate += is_gate_error(call)
            pending.add(call.name)
        else:
            pending.discard(call.name)
    wanted = [f.lower() for f in fast_path]
    used = False
    if wanted:
        for call in calls:
            if call.is_error:
                continue
            text = _SORTED_JSON.encode(call.arguments).lower()
            if any(w in text for w in wanted):
                used = True
                break
    return ToolTrace(
        calls=len(calls),
        errors=errors,
        gate_errors=gate,
        retries=retries,
        unrecovered_error=bool(pending),
        names=frozenset(c.name for c in calls),
        fast_path_used=used,
    )


def classify_failure(
    episode: Episode, passed: bool | None, excluded: bool, trace: ToolTrace
) -> str:
    """The failure class of one episode (``passed`` is None when it has no grade)."""
    if episode.status == "harness_error" or excluded:
        return "harness_error"
    if passed is None:
        return "ungraded"
    if passed:
        return "passed"
    if episode.status == "timeout":
        return "timeout"
    if trace.gate_errors >= GATE_LOOP_MIN:
        return "gate_refusal_loop"
    if episode.status == "budget_exhausted":
        return "budget_exhausted"
    if episode.status == "no_answer" or not (episode.final_answer or "").strip():
        return "no_final_answer"
    if trace.unrecovered_error:
        return "tool_error"
    return "wrong_answer"
