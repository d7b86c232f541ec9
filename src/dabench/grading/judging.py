"""What the judge is shown about an episode: question, ground truth, exact answer, tool
outputs (truncated) and the graded answer."""

from __future__ import annotations

from dabench.grading.answer import graded_answer
from dabench.grading.numbers import format_number
from dabench.journal.records import Episode
from dabench.judge.prompt import DEFAULT_TOOL_OUTPUT_CHARS, JudgeInput, render_tool_outputs
from dabench.tasks.model import Task, Truth

MAX_TRUTH_ROWS = 20


def render_question(task: Task) -> str:
    """The user's message(s); for multi-turn tasks every turn, the last one graded."""
    messages = task.messages
    if len(messages) == 1:
        return messages[0]
    lines = [f"Turn {i}: {m}" for i, m in enumerate(messages, start=1)]
    lines.append(f"(The answer to turn {len(messages)} is graded.)")
    return "\n".join(lines)


def _table(columns: list[str], rows: list[list[object]]) -> str:
    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns)
    body = ["| " + " | ".join(str(c) for c in row) + " |" for row in rows[:MAX_TRUTH_ROWS]]
    more = (
        [f"({len(rows) - MAX_TRUTH_ROWS} more rows not shown)"]
        if len(rows) > MAX_TRUTH_ROWS
        else []
    )
    return "\n".join([head, *body, *more])


def render_ground_truth(task: Task, truth: Truth | None) -> str:
    """The ground truth in words for the judge."""
    grading = task.grading
    parts: list[str] = []
    if grading.kind == "refusal":
        parts.append(
            "The request cannot be answered as asked (it is impossible, contradictory or refers "
            "to something that does not exist). A correct answer says so and invents nothing."
        )
    elif grading.kind == "abstain":
        parts.append(
            "The requested fact is not known to the system (never taught, not in the data). "
            "A correct answer says it does not know and invents nothing."
        )
    if truth is not None and truth.value is not None:
        parts.append(f"The correct number is {format_number(truth.value)}.")
    if truth is not None and truth.naive_value is not None:
        parts.append(
            f"A known-wrong (naive) answer is {format_number(truth.naive_value)}; it comes from "
            f"falling into the trap ({', '.join(task.trap_classes) or 'knowledge trap'})."
        )
    if truth is not None and truth.rows and truth.value is None:
        parts.append("The correct result is:\n" + _table(truth.columns, truth.rows))
    entities = list(truth.entities if truth is not None and truth.entities else grading.entities)
    if entities:
        parts.append(f"Correct entities: {', '.join([*entities, *grading.aliases])}.")
    if grading.wrong_aliases:
        parts.append(f"Known-wrong entities: {', '.join(grading.wrong_aliases)}.")
    return "\n".join(parts) or "(no ground truth beyond the rubric items)"


def build_judge_input(
    episode: Episode,
    task: Task,
    truth: Truth | None,
    *,
    tool_output_chars: int = DEFAULT_TOOL_OUTPUT_CHARS,
) -> JudgeInput:
    """The judge input for one episode of ``task``."""
    exact = "(none)"
    if truth is not None and truth.value is not None:
        exact = format_number(truth.value)
    return JudgeInput(
        question=render_question(task),
        ground_truth=render_ground_truth(task, truth),
        exact_answer=exact,
        tool_outputs=render_tool_outputs(episode.tool_calls, tool_output_chars),
        answer=graded_answer(episode) or "(empty answer)",
        rubric_items=list(task.rubric),
    )
