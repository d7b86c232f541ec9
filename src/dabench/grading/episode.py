"""Grade one episode: deterministic graders first, the judge only where judgement is needed.

Headline ``passed`` (what accuracy and pass^k use):

- ``numeric`` / ``entity`` / ``exec_sql`` / ``refusal`` / ``abstain`` / ``format``: the
  deterministic checks (for format tasks with ``also_numeric`` both the format and the number).
  For knowledge-trap tasks the number decides; the judged caveat rubric item is recorded
  separately (``scores["rubric"]``, ``scores["right_reason"]``) so statistics can report "the
  right number for the right reason".
- ``judge``: the judged correctness is at least ``ScoreConfig.judge_pass_threshold``.
- ``harness_error`` episodes are excluded (``excluded=True``), never model failures;
  ``timeout``, ``budget_exhausted`` and ``no_answer`` are model failures (overall 0).
- S5 protocol episodes: every protocol step that has a verdict passed.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from dabench.blocking import blocking
from dabench.grading.answer import graded_answer
from dabench.grading.entity import check_entity
from dabench.grading.exec_sql import check_exec_sql
from dabench.grading.format_content import check_content
from dabench.grading.formats import check_format, numeric_part
from dabench.grading.judging import build_judge_input
from dabench.grading.numeric import asked_currency, check_numeric
from dabench.grading.refusal import check_refusal
from dabench.grading.scores import (
    FAILURE_STATUSES,
    ScoreConfig,
    correctness_score,
    cost_score,
    groundedness_score,
    latency_score,
    relevance_score,
    weighted_overall,
)
from dabench.grading.tool_equivalents import offered_expected_tools
from dabench.grading.tools import check_tool_overlap, error_rate_score
from dabench.journal.records import Episode, Grade, GradeCheck
from dabench.judge.judge import Judge, JudgeError, JudgeResult, verdict_summary
from dabench.roles import ToolRoles
from dabench.tasks.model import Protocol, Task, Truth


class NotGradable(Exception):
    """The episode cannot be graded with what we were given (missing truth, warehouse or
    judge): the grade is excluded with this reason, never counted as a model failure."""


def task_currency(task: Task) -> str | None:
    """The currency the task asks its amount in: named by its last message, else by the
    conversation as a whole (:func:`~dabench.grading.numeric.asked_currency`)."""
    messages = task.messages
    return asked_currency(messages[-1]) or asked_currency(" ".join(messages))


def _deterministic(
    episode: Episode,
    task: Task,
    truth: Truth | None,
    warehouse: Path | None,
    roles: ToolRoles | None = None,
    sql_dialect: str = "duckdb",
) -> list[GradeCheck]:
    grading = task.grading
    answer = graded_answer(episode)
    kind = grading.kind
    checks: list[GradeCheck] = []
    content = _format_content(answer, task, truth)
    if kind == "numeric" or (kind == "format" and grading.also_numeric and content is None):
        if truth is None or truth.value is None:
            raise NotGradable(f"no numeric truth for task {task.id!r} in the lock")
        numeric_text = answer
        if kind == "format" and grading.format is not None:
            numeric_text = numeric_part(answer, grading.format)
        checks.append(
            check_numeric(
                numeric_text,
                truth.value,
                tolerance_abs=grading.tolerance_abs,
                tolerance_rel=grading.tolerance_rel,
                naive=truth.naive_value,
                currency=task_currency(task),
                question=" ".join(task.messages),
            )
        )
    if kind == "entity":
        entities = list(truth.entities) if truth is not None and truth.entities else []
        checks.append(
            check_entity(
                answer,
                entities or grading.entities,
                aliases=grading.aliases,
                wrong_aliases=grading.wrong_aliases,
            )
        )
    elif kind == "exec_sql":
        if truth is None:
            raise NotGradable(f"no gold result for task {task.id!r} in the lock")
        if warehouse is None:
            raise NotGradable("exec_sql grading needs the world's warehouse (pass --world DIR)")
        checks.append(
            check_exec_sql(
                episode,
                truth.columns,
                truth.rows,
                warehouse=warehouse,
                mode=grading.exec_sql_mode,
                tolerance_abs=grading.tolerance_abs,
                tolerance_rel=grading.tolerance_rel,
                roles=roles,
                sql_dialect=sql_dialect,
            )
        )
    elif kind in ("refusal", "abstain"):
        question = task.prompt or (task.turns[-1] if task.turns else None)
        checks.append(
            check_refusal(answer, "refusal" if kind == "refusal" else "abstain", question=question)
        )
    elif kind == "format" and grading.format is not None:
        checks.insert(0, check_format(answer, grading.format, question=" ".join(task.messages)))
        checks.extend([content] if content is not None else [])
    return checks


def _format_content(answer: str, task: Task, truth: Truth | None) -> GradeCheck | None:
    """A format task's content check against its truth rows (every key, bullet or table row;
    :func:`~dabench.grading.format_content.check_content`); it replaces the first-item
    number check of ``also_numeric``. ``None`` for other kinds and for single numbers."""
    grading = task.grading
    if grading.kind != "format" or grading.format is None or truth is None:
        return None
    return check_content(
        answer,
        grading.format,
        truth.columns,
        truth.rows,
        question=" ".join(task.messages),
        tolerance_abs=grading.tolerance_abs,
        tolerance_rel=grading.tolerance_rel,
    )


def _wants_judge(task: Task, judge_all: bool) -> bool:
    return task.grading.kind == "judge" or bool(task.rubric) or judge_all


def _programmatic_scores(episode: Episode, task: Task, config: ScoreConfig) -> dict[str, float]:
    scores = {
        "latency": latency_score(episode.wall_ms, config),
        "error_rate": error_rate_score(episode),
    }
    cost = cost_score(episode.cost_usd, config)
    if cost is not None:
        scores["cost"] = cost
    return scores


def _judged_scores(result: JudgeResult) -> dict[str, float]:
    verdict = result.verdict
    scores = {
        "correctness": correctness_score(verdict.claims),
        "groundedness": groundedness_score(verdict.claims),
        "relevance": relevance_score(verdict.claims),
        "format": verdict.format_score / 10.0,
        "instruction_following": verdict.instruction_following_score / 10.0,
    }
    if verdict.rubric:
        yes = [1.0 if r.verdict == "yes" else 0.0 for r in verdict.rubric]
        scores["rubric"] = sum(yes) / len(yes)
        for item in verdict.rubric:
            scores[f"rubric:{item.id}"] = 1.0 if item.verdict == "yes" else 0.0
    return scores


def _excluded(episode: Episode, kind: str, reason: str, **extra: Any) -> Grade:
    return Grade(
        key=episode.key, passed=False, score=0.0, kind=kind, reason=reason, excluded=True, **extra
    )


def grade_protocol_episode(episode: Episode, protocol: Protocol | None = None) -> Grade:
    """An S5 protocol episode passes when every step with a verdict passed."""
    if episode.status == "harness_error":
        return _excluded(episode, "protocol", f"harness error: {episode.harness_error}")
    checks = [
        GradeCheck(name=f"step:{s.name}", passed=bool(s.passed), reason=s.detail or s.kind)
        for s in episode.steps
        if s.passed is not None
    ]
    passed = bool(checks) and all(c.passed for c in checks) and episode.status == "completed"
    failed = [c.name.removeprefix("step:") for c in checks if not c.passed]
    if episode.status != "completed":
        reason = f"model failure: {episode.status}"
    elif not checks:
        reason = "no protocol step has a verdict"
    else:
        reason = "every step passed" if passed else f"step(s) failed: {', '.join(failed)}"
    return Grade(
        key=episode.key,
        passed=passed,
        score=1.0 if passed else 0.0,
        kind="protocol",
        reason=reason,
        checks=checks,
        scores={"correctness": 1.0 if passed else 0.0, "overall": 1.0 if passed else 0.0},
    )


async def agrade_episode(
    episode: Episode,
    task: Task,
    truth: Truth | None,
    *,
    judge: Judge | None = None,
    score_config: ScoreConfig | None = None,
    warehouse: Path | None = None,
    judge_all: bool = False,
    offered_tools: Collection[str] | None = None,
    roles: ToolRoles | None = None,
    sql_dialect: str = "duckdb",
) -> Grade:
    """Grade one episode (async because the judge is). ``judge_all`` judges every completed
    episode (seed-003 style model comparison) instead of only where judgement is needed.
    ``offered_tools``: the tools the arm's target offers (from the manifest); an expected
    tool it does not offer is left out of the tool check (``None``: unknown, all count).
    ``roles``: the arm's role map (from the manifest; ``None``: the legacy reference names),
    through which exec_sql finds the predicted SQL and the tool check matches roles.
    ``sql_dialect``: the dialect the arm's target speaks (PostgreSQL or SQLite SQL is
    translated before exec_sql runs it on the world's DuckDB warehouse)."""
    config = score_config or ScoreConfig()
    kind = task.grading.kind
    if episode.status == "harness_error":
        cause = episode.harness_error or "unknown cause"
        return _excluded(episode, kind, f"harness error (excluded, not a model failure): {cause}")
    failure = episode.status in FAILURE_STATUSES
    try:
        checks = (
            _deterministic(episode, task, truth, warehouse, roles, sql_dialect)
            if not failure
            else []
        )
    except NotGradable as exc:
        return _excluded(episode, kind, f"not graded: {exc}")
    headline = list(checks)
    expected_tools = offered_expected_tools(task.expected_tools, offered_tools, roles)
    if expected_tools:
        checks.append(check_tool_overlap(episode, expected_tools, roles))
    scores = _programmatic_scores(episode, task, config)
    if expected_tools:
        scores["tool"] = 1.0 if checks[-1].passed else 0.0

    uncertain = any(c.uncertain for c in headline)
    judge_dict: dict[str, Any] | None = None
    result: JudgeResult | None = None
    judge_error: str | None = None
    if judge is not None and not failure and (uncertain or _wants_judge(task, judge_all)):
        inp = build_judge_input(episode, task, truth, tool_output_chars=judge.tool_output_chars)
        try:
            result = await judge.judge(inp)
            judge_dict = verdict_summary(result, judge)
        except JudgeError as exc:
            judge_error = str(exc)
            judge_dict = {**judge.describe(), "error": judge_error}

    if failure:
        passed = False
        reason = f"model failure: {episode.status}"
        if episode.status == "budget_exhausted":
            reason += f" (tool-call budget of {task.budget} used up)"
    elif kind == "judge":
        if result is None:
            why = judge_error or "grading.kind 'judge' needs a judge (--judge provider:model)"
            return _excluded(episode, kind, f"not graded: {why}", judge=judge_dict)
        correctness = correctness_score(result.verdict.claims)
        passed = correctness >= config.judge_pass_threshold
        verdict = "at least" if passed else "below"
        reason = (
            f"judged correctness {correctness:.2f} over {len(result.verdict.claims)} claims, "
            f"{verdict} the pass threshold {config.judge_pass_threshold:g}"
        )
    else:
        passed = all(c.passed for c in headline)
        reason = "; ".join(c.reason for c in headline)
    settled_by: str | None = None
    if uncertain and not failure and kind != "judge":
        if result is not None:
            settled = all(c.passed or c.uncertain for c in headline)
            correctness = correctness_score(result.verdict.claims)
            passed = settled and correctness >= config.judge_pass_threshold
            settled_by = "judge"
            verdict = "passes" if passed else "fails"
            reason += (
                f"; settled by the judge: {verdict} (judged correctness {correctness:.2f}, "
                f"pass threshold {config.judge_pass_threshold:g})"
            )
        else:
            why = judge_error or "no judge configured"
            reason += f"; not settled ({why}): counted as not passed"

    deterministic = 1.0 if passed else 0.0
    if kind != "judge" and not failure:
        if not (uncertain and result is not None):
            scores["exact_answer"] = deterministic
        scores["correctness"] = deterministic
    if task.grading.format is not None and headline:
        scores["format"] = 1.0 if headline[0].passed else 0.0
    if result is not None:
        judged = _judged_scores(result)
        if task.grading.format is not None:
            judged.pop("format")
        scores.update(judged)
        if task.rubric:
            rubric_ok = all(r.verdict == "yes" for r in result.verdict.rubric)
            scores["right_reason"] = 1.0 if passed and rubric_ok else 0.0
            said = ", ".join(f"{r.id}: {r.verdict}" for r in result.verdict.rubric)
            reason += f"; judged rubric: {said}"
    elif judge_error:
        reason += f"; judge failed, deterministic grade only: {judge_error}"
    scores["overall"] = 0.0 if failure else weighted_overall(scores, config.weights)
    score = scores["overall"] if kind == "judge" or result is not None else deterministic
    return Grade(
        key=episode.key,
        passed=passed,
        score=score,
        kind=kind,
        reason=reason,
        checks=checks,
        scores=scores,
        judge=judge_dict,
        rubric_version=judge.rubric.version if result is not None and judge else None,
        uncertain=uncertain and not failure,
        settled_by=settled_by,
    )


grade_episode = blocking(
    agrade_episode,
    name="grade_episode",
    doc="Synchronous :func:`agrade_episode` (do not call from inside a running event loop).",
)
