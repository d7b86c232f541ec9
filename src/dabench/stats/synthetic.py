"""Seeded synthetic run directories for tests, demos and the scale benchmark.

A synthetic run looks like a real one on disk (``manifest.json``, ``episodes.jsonl``,
``grades.jsonl``, ``tasks.json``) but its episodes are drawn from per-arm skill levels, so
statistics and reports can be exercised at any size without a model or a world.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from dabench.journal.records import (
    AuditCheck,
    Episode,
    EpisodeStatus,
    Grade,
    GradeCheck,
    Message,
    RunManifest,
    StepRecord,
    TokenUsage,
    ToolCall,
    episode_key,
)
from dabench.journal.store import write_manifest

SUITE_CATEGORIES = {
    "s1": ("discovery", "single_tool", "filters"),
    "s2": ("analytical", "cross_table", "temporal", "format", "multi_step"),
    "s3": ("knowledge_trap", "multi_turn", "adversarial"),
    "s5": ("lifecycle",),
}
TRAP_CLASSES = (
    "cents_units",
    "gross_vs_net",
    "fiscal_calendar",
    "freshness_cutoff",
    "tier_boundary",
    "deprecated_table",
)
DIFFICULTIES = ("easy", "medium", "hard", "expert")
TOOLS = ("search", "describe_dataset", "sql_query", "read_knowledge", "list_datasets")
STEPS = ("teach", "recall", "promote", "transfer", "supersede", "abstain")
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SyntheticArm:
    """One synthetic arm: its name, profile and skill (log-odds of success)."""

    name: str
    skill: float
    profile: str = "a2"
    gate: bool = False
    """The arm's platform has the search-first gate (produces SEARCH_REQUIRED refusals)."""
    mean_calls: float = 6.0
    harness_errors: float = 0.008
    """Share of episodes that end in a harness error (excluded from grading)."""


@dataclass
class SyntheticSpec:
    """What to generate."""

    arms: list[SyntheticArm] = field(
        default_factory=lambda: [
            SyntheticArm("a0", 0.2, "a0", mean_calls=9.0),
            SyntheticArm("a2", 1.6, "a2", gate=True, mean_calls=6.0),
        ]
    )
    tasks: int = 40
    k: int = 3
    seed: int = 7
    transcript: bool = True
    """Write messages (a short transcript) on every episode."""
    run_id: str = "synthetic"
    world_hash: str = "w" * 12
    task_set_hash: str = ""


def _task(i: int, rng: np.random.Generator) -> dict[str, Any]:
    suite = ("s1", "s2", "s2", "s3", "s3", "s5")[i % 6]
    category = str(rng.choice(SUITE_CATEGORIES[suite]))
    difficulty = DIFFICULTIES[int(rng.integers(0, 4))]
    task: dict[str, Any] = {
        "id": f"{suite}.t{i:05d}",
        "suite": suite,
        "category": category,
        "difficulty": difficulty,
        "trap_classes": [TRAP_CLASSES[(i // 6) % len(TRAP_CLASSES)]] if suite == "s3" else [],
        "expected_tools": ["search"] if suite == "s1" else ["sql_query"],
        "fast_path": ["analytics.daily_revenue"] if suite == "s2" and i % 4 == 0 else [],
        "grading": {"kind": "numeric", "truth_sql": "select 1"},
    }
    if suite == "s5":
        task.update(
            fact="Timestamps before March are UTC.",
            steps=[{"kind": "episode", "name": s, "prompt": f"{s} the fact"} for s in STEPS],
        )
        del task["trap_classes"], task["expected_tools"], task["fast_path"], task["grading"]
    else:
        task["prompt"] = f"Question {i}: what is the total of metric {i % 17} for segment {i % 5}?"
    return task


def _calls(
    arm: SyntheticArm, task: dict[str, Any], passed: bool, rng: np.random.Generator
) -> list[ToolCall]:
    n = max(1, int(rng.poisson(arm.mean_calls if passed else arm.mean_calls * 1.6)))
    calls: list[ToolCall] = []
    gate_refusals = int(rng.integers(0, 4)) if arm.gate and rng.random() < 0.25 else 0
    for j in range(n):
        code: str | None
        if j < gate_refusals:
            name, err, code = "sql_query", True, "SEARCH_REQUIRED"
        else:
            name = TOOLS[int(rng.integers(0, len(TOOLS)))]
            err = bool(rng.random() < 0.08)
            code = "SQL_ERROR" if err else None
        args: dict[str, Any] = {"sql": f"select sum(x) from sales.orders where k={j}"}
        if task.get("fast_path") and passed and j == n - 1:
            name, err, code = "sql_query", False, None
            args = {"sql": "select sum(revenue) from analytics.daily_revenue"}
        calls.append(
            ToolCall(
                index=j,
                name=name,
                arguments=args,
                result='{"error": "refused"}' if err else '{"rows": [[42]]}',
                is_error=err,
                error_code=code,
                latency_ms=float(rng.integers(5, 400)),
            )
        )
    return calls


def _episode(
    spec: SyntheticSpec,
    arm: SyntheticArm,
    task: dict[str, Any],
    attempt: int,
    rng: np.random.Generator,
    index: int,
) -> tuple[Episode, Grade]:
    weight = DIFFICULTIES.index(task["difficulty"]) * 0.6
    p = 1.0 / (1.0 + np.exp(-(arm.skill - weight + rng.normal(0, 0.3))))
    passed = bool(rng.random() < p)
    roll = rng.random()
    status: EpisodeStatus = "completed"
    if not passed and roll < 0.15:
        status = ("timeout", "budget_exhausted", "no_answer")[int(rng.integers(0, 3))]
    elif roll > 1.0 - arm.harness_errors:
        status, passed = "harness_error", False
    calls = _calls(arm, task, passed, rng)
    answer = (
        None
        if status in ("no_answer", "harness_error")
        else f"The answer is {42 if passed else 41}."
    )
    prompts = [task.get("prompt") or task["fact"]]
    steps: list[StepRecord] = []
    if task["suite"] == "s5":
        alive = passed or rng.random() < 0.5
        for name in STEPS:
            ok = alive and bool(rng.random() < 0.9 if passed else rng.random() < 0.6)
            steps.append(StepRecord(name=name, kind="episode", identity="teacher", passed=ok))
            alive = alive and ok
    messages: list[Message] = []
    if spec.transcript:
        messages = [Message(role="user", content=prompts[0])]
        for c in calls[:3]:
            messages.append(
                Message(role="assistant", tool_calls=[{"name": c.name, "arguments": c.arguments}])
            )
            messages.append(Message(role="tool", content=c.result, tool_call_id=f"call{c.index}"))
        messages.append(Message(role="assistant", content=answer or ""))
    wall = float(rng.gamma(3.0, 4000.0)) if status != "timeout" else 120000.0
    started = EPOCH + timedelta(seconds=index)
    usage = TokenUsage(
        input=int(rng.integers(800, 6000)) * len(calls), output=int(rng.integers(50, 900))
    )
    key = episode_key(arm.name, task["id"], attempt)
    episode = Episode(
        key=key,
        run_id=spec.run_id,
        arm=arm.name,
        task_id=task["id"],
        attempt=attempt,
        suite=task["suite"],
        category=task["category"],
        difficulty=task["difficulty"],
        status=status,
        harness_error="provider outage (synthetic)" if status == "harness_error" else None,
        agent="llm",
        provider="synthetic",
        model="synth-1",
        target=f"reference:{arm.profile}",
        prompts=prompts,
        answers=[answer] if answer else [],
        final_answer=answer,
        messages=messages,
        tool_calls=calls if not steps else [],
        steps=steps,
        usage=usage,
        cost_usd=round(usage.total * 3e-6, 6),
        cost_source="price_table",
        wall_ms=wall,
        audit=AuditCheck(
            source="platform",
            expected_calls=len(calls),
            audit_rows=len(calls),
            ok=True,
            enrichment_tokens_full=int(rng.integers(0, 900)) if arm.profile != "a0" else 0,
            enrichment_tokens_delivered=int(rng.integers(0, 600)) if arm.profile != "a0" else 0,
        ),
        started_at=started,
        finished_at=started + timedelta(milliseconds=wall),
    )
    base = float(np.clip(rng.normal(0.85 if passed else 0.3, 0.1), 0, 1))
    names = ("correctness", "groundedness", "relevance", "tool", "latency", "cost")
    scores = {n: float(np.clip(base + rng.normal(0, 0.08), 0, 1)) for n in names}
    scores.update(
        error_rate=1.0 - sum(c.is_error for c in calls) / len(calls),
        format=float(np.clip(base + 0.1, 0, 1)),
        instruction_following=float(np.clip(base + 0.05, 0, 1)),
        overall=base,
    )
    judge = None
    if task["suite"] == "s3":
        judge = {
            "reasoning": "The answer converts cents to dollars."
            if passed
            else "Cents not converted.",
            "claims": [
                {
                    "text": answer or "",
                    "correctness": "supported" if passed else "contradicted",
                    "groundedness": "grounded",
                    "centrality": "central",
                    "severity": None if passed else "critical",
                }
            ],
        }
    grade = Grade(
        key=key,
        passed=passed,
        score=base if not passed else 1.0,
        kind="numeric",
        reason="matches the truth" if passed else "differs from the truth",
        checks=[
            GradeCheck(
                name="exact_answer",
                passed=passed,
                reason="numeric",
                expected=42,
                found=42 if passed else 41,
            )
        ],
        scores=scores,
        judge=judge,
        rubric_version="r1" if judge else None,
        excluded=status == "harness_error",
    )
    return episode, grade


def write_synthetic_run(out: Path | str, spec: SyntheticSpec | None = None) -> Path:
    """Write a synthetic run directory and return its path."""
    spec = spec or SyntheticSpec()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    tasks = [_task(i, rng) for i in range(spec.tasks)]
    manifest = RunManifest(
        run_id=spec.run_id,
        dabench_version="0",
        git_commit=None,
        python_version="3.11",
        experiment={"name": "synthetic", "settings": {"episode_timeout_s": 120}},
        experiment_hash="e" * 12,
        world_seed=930,
        world_scale=1,
        world_hash=spec.world_hash,
        task_set_hash=spec.task_set_hash or f"t{spec.tasks:011d}",
        task_ids=[t["id"] for t in tasks],
        k=spec.k,
        arms=[
            {
                "name": a.name,
                "target": {"kind": "reference", "profile": a.profile},
                "agent": {"kind": "llm", "provider": "synthetic", "model": "synth-1"},
            }
            for a in spec.arms
        ],
        judge={"model": "judge-1", "rubric_version": "r1", "agreement": 0.9},
        started_at=EPOCH,
        finished_at=EPOCH + timedelta(hours=1),
    )
    write_manifest(out, manifest)
    (out / "tasks.json").write_text(json.dumps(tasks, indent=1), encoding="utf-8")
    index = 0
    with (
        (out / "episodes.jsonl").open("w", encoding="utf-8") as eps,
        (out / "grades.jsonl").open("w", encoding="utf-8") as grs,
    ):
        for arm in spec.arms:
            for task in tasks:
                for attempt in range(spec.k):
                    episode, grade = _episode(spec, arm, task, attempt, rng, index)
                    index += 1
                    eps.write(episode.model_dump_json() + "\n")
                    grs.write(grade.model_dump_json() + "\n")
    return out
