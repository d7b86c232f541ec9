"""Hand-built run directories with exactly known contents (for exact statistics tests)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from dabench.journal.records import (
    AuditCheck,
    Episode,
    EpisodeStatus,
    Grade,
    RunManifest,
    StepRecord,
    TokenUsage,
    ToolCall,
    episode_key,
)
from dabench.journal.store import write_grades, write_manifest

T0 = datetime(2026, 2, 1, tzinfo=UTC)


def call(name: str = "sql_query", *, error: str | None = None, **arguments: Any) -> ToolCall:
    """A tool call (``error`` is its error code; the call then failed)."""
    return ToolCall(
        index=0,
        name=name,
        arguments=arguments,
        is_error=error is not None,
        error_code=error,
        result="{}",
    )


def episode(
    arm: str,
    task_id: str,
    attempt: int = 0,
    *,
    status: EpisodeStatus = "completed",
    calls: list[ToolCall] | None = None,
    suite: str = "s2",
    category: str = "analytical",
    difficulty: str = "medium",
    answer: str | None = "42",
    wall_s: float = 10.0,
    tokens: int = 1000,
    cost: float | None = 0.01,
    steps: list[StepRecord] | None = None,
    enrichment: int = 0,
    ttft_ms: float | None = None,
    ttft_source: str = "measured",
    usage_known: bool = True,
) -> Episode:
    """One episode with sensible defaults."""
    calls = [c.model_copy(update={"index": i}) for i, c in enumerate(calls or [])]
    started = T0 + timedelta(minutes=attempt)
    return Episode(
        key=episode_key(arm, task_id, attempt),
        run_id="hand",
        arm=arm,
        task_id=task_id,
        attempt=attempt,
        suite=suite,
        category=category,
        difficulty=difficulty,
        status=status,
        harness_error="provider down" if status == "harness_error" else None,
        agent="llm",
        provider="fake",
        model="m1",
        target=f"reference:{arm}",
        prompts=[f"question {task_id}"],
        answers=[answer] if answer else [],
        final_answer=answer,
        tool_calls=calls,
        steps=steps or [],
        usage=TokenUsage(input=tokens),
        usage_known=usage_known,
        cost_usd=cost,
        wall_ms=wall_s * 1000,
        ttft_ms=ttft_ms,
        ttft_source=ttft_source if ttft_ms is not None else None,
        audit=AuditCheck(
            source="platform",
            expected_calls=len(calls),
            audit_rows=len(calls),
            ok=True,
            enrichment_tokens_delivered=enrichment,
        ),
        started_at=started,
        finished_at=started + timedelta(seconds=wall_s),
    )


def grade(ep: Episode, passed: bool, score: float | None = None, **scores: float) -> Grade:
    """The grade of an episode (score defaults to 1/0)."""
    value = (1.0 if passed else 0.0) if score is None else score
    return Grade(
        key=ep.key,
        passed=passed,
        score=value,
        kind="numeric",
        reason="ok" if passed else "wrong",
        scores={"overall": value, **scores},
        excluded=ep.status == "harness_error",
    )


def write_run(
    run_dir: Path,
    episodes: list[Episode],
    grades: list[Grade],
    *,
    k: int,
    arms: list[str] | None = None,
    tasks: list[dict[str, Any]] | None = None,
    run_id: str = "hand",
    world_hash: str = "world1",
    task_set_hash: str = "tasks1",
    experiment: dict[str, Any] | None = None,
    agents: dict[str, dict[str, Any]] | None = None,
    profiles: dict[str, str] | None = None,
    started_at: datetime = T0,
) -> Path:
    """Write a run directory from explicit episodes and grades."""
    arm_names = arms or list(dict.fromkeys(e.arm for e in episodes))
    task_ids = list(dict.fromkeys(e.task_id for e in episodes))
    manifest = RunManifest(
        run_id=run_id,
        dabench_version="0.test",
        git_commit=None,
        python_version="3.11",
        experiment=experiment or {},
        experiment_hash="x",
        world_seed=1,
        world_scale=1,
        world_hash=world_hash,
        task_set_hash=task_set_hash,
        task_ids=task_ids,
        k=k,
        arms=[
            {
                "name": a,
                "target": {"kind": "reference", "profile": (profiles or {}).get(a, a)},
                "agent": (agents or {}).get(a, {"kind": "llm", "provider": "fake", "model": "m1"}),
            }
            for a in arm_names
        ],
        started_at=started_at,
        finished_at=started_at + timedelta(hours=1),
    )
    write_manifest(run_dir, manifest)
    with (run_dir / "episodes.jsonl").open("w", encoding="utf-8") as fh:
        for ep in episodes:
            fh.write(ep.model_dump_json() + "\n")
    write_grades(run_dir, grades)
    if tasks is not None:
        (run_dir / "tasks.json").write_text(json.dumps(tasks), encoding="utf-8")
    return run_dir


def outcome_run(
    run_dir: Path,
    outcomes: dict[str, dict[str, list[bool]]],
    *,
    k: int,
    **kwargs: Any,
) -> Path:
    """A run from ``{arm: {task: [passed per attempt]}}``."""
    episodes, grades = [], []
    for arm, tasks in outcomes.items():
        for task_id, results in tasks.items():
            for attempt, ok in enumerate(results):
                ep = episode(arm, task_id, attempt)
                episodes.append(ep)
                grades.append(grade(ep, ok))
    return write_run(run_dir, episodes, grades, k=k, **kwargs)


TTFT_VALUES_MS = (500.0, 100.0, 300.0, 200.0, 400.0)
"""The times to first token of the completed episodes t1..t5 of arm ``kb`` in :func:`ttft_run`."""


def ttft_run(run_dir: Path) -> Path:
    """Two arms: ``kb`` (Kibana-like, streams: t1..t5 record :data:`TTFT_VALUES_MS`, t4 and t5
    in suite s3; t6 completed without one; a timeout and a harness error with one) and ``llm``
    (an LLM-provider arm: no episode records a time to first token)."""
    kibana = {"agent": "kibana", "provider": None, "model": None, "target": "kibana:9.3.0"}
    kb = [
        episode("kb", f"t{i + 1}", ttft_ms=v, suite="s3" if i >= 3 else "s2").model_copy(
            update=kibana
        )
        for i, v in enumerate(TTFT_VALUES_MS)
    ]
    kb += [
        episode("kb", "t6").model_copy(update=kibana),
        episode("kb", "t7", status="timeout", answer=None, ttft_ms=9000.0).model_copy(
            update=kibana
        ),
        episode("kb", "t8", status="harness_error", answer=None, ttft_ms=7.0).model_copy(
            update=kibana
        ),
    ]
    llm = [episode("llm", f"t{i}") for i in (1, 2, 3)]
    episodes = kb + llm
    grades = [grade(ep, ep.status == "completed") for ep in episodes]
    return write_run(
        run_dir,
        episodes,
        grades,
        k=1,
        agents={"kb": {"kind": "kibana", "connector_id": "c1"}},
    )
