"""A run directory as store records (its statistics read from stats.json, else computed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dabench.stats import RunStats, compute_stats, load_run, read_stats
from dabench.stats.model import GroupStats
from dabench.stats.rundir import RunData
from dabench.store.records import ArmStatRecord, EpisodeRecord, RunRecord, StoredRun

DIMENSIONS = ("overall", "suite")
"""The breakdowns published per arm: the whole run and each suite."""


TARGET_VERSION_KEYS = ("kibana_version", "platform_version", "server_version", "version")
"""Where a manifest's target description holds the target's version."""


def arm_identity(raw: dict[str, Any]) -> dict[str, str | None]:
    """Agent kind, model and target (its label, ``@version`` when the manifest knows the
    target's version, e.g. Kibana's) of a manifest arm: what makes a trend series, so a
    change of agent, model or target version starts a new series instead of a regression."""
    agent = raw.get("agent") if isinstance(raw.get("agent"), dict) else {}
    target = raw.get("target") if isinstance(raw.get("target"), dict) else {}
    assert isinstance(agent, dict) and isinstance(target, dict)
    label = _str(target.get("label")) or _str(target.get("kind"))
    version = next((_str(target[k]) for k in TARGET_VERSION_KEYS if target.get(k)), None)
    return {
        "agent": _str(agent.get("kind")),
        "model": _str(agent.get("model")),
        "target": f"{label}@{version}" if label and version else label,
    }


def _arm_fields(run: RunData, arm: str) -> dict[str, str | None]:
    """Agent kind, model and target of an arm (manifest first, else its episodes)."""
    for raw in run.manifest.arms:
        if raw.get("name") == arm:
            return arm_identity(raw)
    ep = next((e for e in run.episodes if e.arm == arm), None)
    if ep is None:
        return {"agent": None, "model": None, "target": None}
    return {"agent": ep.agent, "model": ep.model, "target": ep.target}


def _str(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _arm_stat(run: RunData, stats: RunStats, g: GroupStats) -> ArmStatRecord:
    return ArmStatRecord(
        run_id=stats.run_id,
        arm=g.arm,
        dimension=g.dimension,
        value=g.value,
        started_at=run.manifest.started_at,
        k=run.manifest.k,
        n_tasks=g.n_tasks,
        n_episodes=g.n_episodes,
        n_excluded=g.n_excluded,
        accuracy=g.accuracy.estimate,
        accuracy_low=g.accuracy.low,
        accuracy_high=g.accuracy.high,
        pass_hat_k=g.pass_hat_k.estimate,
        pass_hat_k_low=g.pass_hat_k.low,
        pass_hat_k_high=g.pass_hat_k.high,
        score=g.score.estimate,
        tool_calls_median=g.efficiency.tool_calls_median,
        tokens_mean=g.efficiency.tokens_mean,
        cost_total_usd=g.efficiency.cost_total_usd,
        **_arm_fields(run, g.arm),
    )


def collect_run(run_dir: Path) -> StoredRun:
    """The records of the run in ``run_dir``."""
    run = load_run(run_dir)
    stats = read_stats(run_dir) or compute_stats(run, resamples=0)
    m = run.manifest
    judge = m.judge or {}
    record = RunRecord(
        run_id=m.run_id,
        name=str(m.experiment.get("name") or m.run_id),
        started_at=m.started_at,
        finished_at=m.finished_at,
        k=m.k,
        tasks=len(m.task_ids),
        task_set_hash=m.task_set_hash,
        world_hash=m.world_hash,
        world_seed=m.world_seed,
        dabench_version=m.dabench_version,
        git_commit=m.git_commit,
        judge_model=_str(judge.get("model")),
        run_dir=str(run_dir.resolve()),
        manifest=m.model_dump(mode="json"),
    )
    episodes = []
    for ep in run.episodes:
        grade = run.grades.get(ep.key)
        episodes.append(
            EpisodeRecord(
                run_id=m.run_id,
                arm=ep.arm,
                task_id=ep.task_id,
                attempt=ep.attempt,
                suite=ep.suite,
                category=ep.category,
                difficulty=ep.difficulty,
                status=ep.status,
                agent=ep.agent,
                provider=ep.provider,
                model=ep.model,
                target=ep.target,
                tool_calls=len(ep.tool_calls),
                tokens=ep.usage.total if ep.usage_known else None,
                cost_usd=ep.cost_usd,
                wall_ms=ep.wall_ms,
                passed=None if grade is None else grade.passed,
                score=None if grade is None else grade.score,
                excluded=ep.status == "harness_error" or (grade is not None and grade.excluded),
                started_at=ep.started_at,
            )
        )
    arm_stats = [_arm_stat(run, stats, g) for g in stats.groups if g.dimension in DIMENSIONS]
    return StoredRun(run=record, episodes=episodes, arm_stats=arm_stats)
