"""Builders of episodes, tool calls and tasks for grading and judge tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from dabench.journal.records import Episode, ToolCall
from dabench.tasks.model import Task

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_episode(
    answer: str | None = "",
    *,
    task_id: str = "t1",
    status: str = "completed",
    tool_calls: list[ToolCall] | None = None,
    **extra: Any,
) -> Episode:
    """A completed single-turn episode with ``answer``."""
    fields: dict[str, Any] = {
        "key": f"a0/{task_id}/0",
        "run_id": "r1",
        "arm": "a0",
        "task_id": task_id,
        "attempt": 0,
        "suite": "s2",
        "category": "analytical",
        "difficulty": "medium",
        "status": status,
        "agent": "llm",
        "target": "reference:a0",
        "prompts": ["q"],
        "answers": [answer] if answer is not None else [],
        "final_answer": answer,
        "tool_calls": tool_calls or [],
        "wall_ms": 2000.0,
        "started_at": T0,
        "finished_at": T0,
    }
    fields.update(extra)
    return Episode.model_validate(fields)


def sql_call(index: int, sql: str, *, is_error: bool = False, result: str = "") -> ToolCall:
    """A ``sql_query`` tool call."""
    return ToolCall(
        index=index, name="sql_query", arguments={"sql": sql}, is_error=is_error, result=result
    )


def make_task(grading: dict[str, Any], **extra: Any) -> Task:
    """A task with this grading block."""
    fields: dict[str, Any] = {
        "id": "t1",
        "suite": "s2",
        "category": "analytical",
        "difficulty": "medium",
        "prompt": "How much?",
        "grading": grading,
    }
    fields.update(extra)
    return Task.model_validate(fields)
