"""The judge over a real OpenAI-compatible HTTP server on loopback: cache, retry, truncation,
pinning, and its use in grade_episode."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.grading.builders import make_episode, make_task
from tests.judge.scripted import ScriptedJudgeServer, verdict
from tests.providers.servers import Reply, openai_completion

from dabench.grading import agrade_episode
from dabench.journal.records import ToolCall
from dabench.judge.judge import Judge, JudgeError
from dabench.judge.prompt import JudgeInput
from dabench.tasks.model import Truth

TRAP = make_task(
    {"kind": "numeric", "truth_sql": "SELECT 1", "naive_sql": "SELECT 2"},
    id="trap1",
    suite="s3",
    category="knowledge_trap",
    trap_classes=["cents_units"],
    rubric=["caveat.cents_units"],
)
TRAP_TRUTH = Truth(kind="numeric", value=1234.5, naive_value=123450.0)


def _input(**kw: object) -> JudgeInput:
    fields: dict[str, object] = {"question": "q", "ground_truth": "42", "answer": "42"}
    fields.update(kw)
    return JudgeInput.model_validate(fields)


async def test_cache_hit_makes_no_request(
    judge_server: ScriptedJudgeServer, make_judge: Callable[..., Judge]
) -> None:
    judge = make_judge(judge_server)
    episode = make_episode("FINAL ANSWER: $1,234.50 (amounts are in cents)", task_id="trap1")
    first = await agrade_episode(episode, TRAP, TRAP_TRUTH, judge=judge)
    assert len(judge_server.requests) == 1
    second = await agrade_episode(episode, TRAP, TRAP_TRUTH, judge=make_judge(judge_server))
    assert len(judge_server.requests) == 1, "the second grading must be served from the cache"
    assert first.judge is not None and second.judge is not None
    assert second.judge["cached"] is True and first.judge["cached"] is False
    assert first.scores == second.scores
    assert second.rubric_version == "v2" and second.judge["prompt_version"] == "claims_v1"


async def test_request_is_pinned(
    judge_server: ScriptedJudgeServer, make_judge: Callable[..., Judge]
) -> None:
    await make_judge(judge_server).judge(_input())
    body = judge_server.requests[0].body
    assert body["model"] == "judge-1" and body["temperature"] == 0


async def test_invalid_json_is_retried_once(
    judge_server: ScriptedJudgeServer, make_judge: Callable[..., Judge]
) -> None:
    judge_server.enqueue(Reply(body=openai_completion("Sure! The answer looks right.")))
    result = await make_judge(judge_server).judge(_input())
    assert result.attempts == 2 and len(judge_server.requests) == 2
    retry_messages = judge_server.requests[1].body["messages"]
    assert retry_messages[-2]["role"] == "assistant"
    assert "not a valid verdict" in retry_messages[-1]["content"]


async def test_invalid_twice_raises(
    judge_server: ScriptedJudgeServer, make_judge: Callable[..., Judge]
) -> None:
    bad = Reply(body=openai_completion('{"claims": []}'))
    judge_server.enqueue(bad, bad)
    with pytest.raises(JudgeError, match="invalid verdict twice"):
        await make_judge(judge_server).judge(_input())


async def test_wrong_rubric_ids_are_invalid(
    judge_server: ScriptedJudgeServer, make_judge: Callable[..., Judge]
) -> None:
    judge_server.enqueue(Reply(body=openai_completion(verdict({"caveat.other": "yes"}))))
    result = await make_judge(judge_server).judge(_input(rubric_items=["caveat.cents_units"]))
    assert result.attempts == 2
    assert "must answer exactly" in judge_server.requests[1].body["messages"][-1]["content"]


async def test_tool_outputs_truncated_with_notice(
    judge_server: ScriptedJudgeServer, make_judge: Callable[..., Judge]
) -> None:
    call = ToolCall(index=0, name="sql_query", arguments={"sql": "SELECT 1"}, result="x" * 10_000)
    episode = make_episode("FINAL ANSWER: 1234.5", task_id="trap1", tool_calls=[call])
    await agrade_episode(
        episode, TRAP, TRAP_TRUTH, judge=make_judge(judge_server, tool_output_chars=500)
    )
    prompt = judge_server.requests[0].body["messages"][-1]["content"]
    assert "[... truncated: showing the first 500 of" in prompt
    assert "x" * 600 not in prompt


async def test_trap_headline_is_the_number_rubric_recorded_separately(
    judge_server: ScriptedJudgeServer, make_judge: Callable[..., Judge]
) -> None:
    judge_server.decide = lambda _rid, _answer: "no"
    episode = make_episode("FINAL ANSWER: $1,234.50", task_id="trap1")
    grade = await agrade_episode(episode, TRAP, TRAP_TRUTH, judge=make_judge(judge_server))
    assert grade.passed, "the number decides a trap task"
    assert grade.scores["rubric:caveat.cents_units"] == 0.0
    assert grade.scores["right_reason"] == 0.0
    assert "caveat.cents_units: no" in grade.reason
    assert grade.score == grade.scores["overall"]


async def test_judge_kind_task(
    judge_server: ScriptedJudgeServer, make_judge: Callable[..., Judge]
) -> None:
    task = make_task({"kind": "judge"}, id="open1")
    judge_server.claims = [
        {
            "text": "a",
            "centrality": "central",
            "correctness": "correct",
            "groundedness": "grounded",
        },
        {
            "text": "b",
            "centrality": "central",
            "correctness": "contradicted",
            "groundedness": "grounded",
            "severity": "critical",
        },
    ]
    episode = make_episode("An answer.", task_id="open1")
    grade = await agrade_episode(episode, task, None, judge=make_judge(judge_server))
    assert not grade.passed and grade.scores["correctness"] == 0.0
    assert "below the pass threshold" in grade.reason
    no_judge = await agrade_episode(episode, task, None)
    assert no_judge.excluded and "needs a judge" in no_judge.reason


async def test_judge_failure_keeps_deterministic_grade(
    judge_server: ScriptedJudgeServer, make_judge: Callable[..., Judge]
) -> None:
    bad = Reply(body=openai_completion("not json"))
    judge_server.enqueue(bad, bad)
    episode = make_episode("FINAL ANSWER: 1234.5", task_id="trap1")
    grade = await agrade_episode(episode, TRAP, TRAP_TRUTH, judge=make_judge(judge_server))
    assert grade.passed and not grade.excluded
    assert grade.judge is not None and "error" in grade.judge
    assert "judge failed" in grade.reason


PLAIN = make_task({"kind": "numeric", "truth_sql": "SELECT 1"}, id="plain1")
PLAIN_TRUTH = Truth(kind="numeric", value=1234.5)
TWO_VALUES = "Net revenue was $1,234.50 compared with $1,100.00 in Q2."


async def test_uncertain_grade_is_settled_by_the_judge(
    judge_server: ScriptedJudgeServer, make_judge: Callable[..., Judge]
) -> None:
    episode = make_episode(TWO_VALUES, task_id="plain1")
    alone = await agrade_episode(episode, PLAIN, PLAIN_TRUTH)
    assert alone.uncertain and not alone.passed and alone.settled_by is None
    assert "not settled (no judge configured)" in alone.reason
    assert alone.scores["correctness"] == 0.0 and alone.judge is None

    judged = await agrade_episode(episode, PLAIN, PLAIN_TRUTH, judge=make_judge(judge_server))
    assert len(judge_server.requests) == 1, "an uncertain grade goes to the judge"
    assert judged.uncertain and judged.passed and judged.settled_by == "judge"
    assert "settled by the judge: passes" in judged.reason
    assert "exact_answer" not in judged.scores and judged.scores["correctness"] == 1.0


async def test_uncertain_grade_judged_wrong_fails(
    judge_server: ScriptedJudgeServer, make_judge: Callable[..., Judge]
) -> None:
    judge_server.claims = [
        {
            "text": "net revenue was $1,100.00",
            "centrality": "central",
            "correctness": "contradicted",
            "groundedness": "grounded",
            "severity": "critical",
        }
    ]
    episode = make_episode(TWO_VALUES, task_id="plain1")
    grade = await agrade_episode(episode, PLAIN, PLAIN_TRUTH, judge=make_judge(judge_server))
    assert grade.uncertain and not grade.passed and grade.settled_by == "judge"
    assert "settled by the judge: fails" in grade.reason


async def test_settled_grade_makes_no_judge_call(
    judge_server: ScriptedJudgeServer, make_judge: Callable[..., Judge]
) -> None:
    episode = make_episode("FINAL ANSWER: $1,234.50", task_id="plain1")
    grade = await agrade_episode(episode, PLAIN, PLAIN_TRUTH, judge=make_judge(judge_server))
    assert grade.passed and not grade.uncertain and grade.settled_by is None
    assert judge_server.requests == [], "rules that settle the grade need no judge"
