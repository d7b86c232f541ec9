"""Caveats generated from the data: what a reader must know before trusting the numbers."""

from __future__ import annotations

from typing import Any

import numpy as np

from dabench.judge.rubric import calibration_summary
from dabench.stats.frame import EpisodeFrame
from dabench.stats.model import RunStats
from dabench.stats.rundir import RunData

AGREEMENT_KEYS = ("agreement", "calibration_agreement", "judge_agreement")
"""Where the manifest's judge record (or the rubric's calibration report) holds agreement."""
SMALL_SAMPLE_TASKS = 10
"""Groups with fewer tasks than this get a wide-CI caveat."""


def _judge_caveat(run: RunData, frame: EpisodeFrame) -> str | None:
    judge = run.manifest.judge or {}
    judged = frame.judged
    if not judge and not judged:
        return None
    model = str(judge.get("model", "?"))
    rubric = judge.get("rubric_version") or frame.judge_rubric
    found: dict[str, Any] = dict(judge)
    if not any(isinstance(judge.get(k), int | float) for k in AGREEMENT_KEYS) and rubric:
        found.update(calibration_summary(str(rubric), model) or {})
    for key in AGREEMENT_KEYS:
        value = found.get(key)
        if isinstance(value, int | float):
            return (
                f"Judge {model} (rubric {rubric or '?'}) agrees with the human-labelled "
                f"calibration set on {100 * value:.0f}% of items; {judged} episode(s) "
                "carry judged scores."
            )
    return (
        f"Judge {model} (rubric {rubric or '?'}) scored {judged} episode(s) but its "
        "agreement with the human-labelled calibration set is not recorded (run `dabench "
        "judge calibrate`): judged scores are unvalidated."
    )


FAKE_PROVIDER = "fake-provider"
"""The :data:`AGENT_CAVEATS` key of an LLM agent whose provider is ``fake``."""

AGENT_CAVEATS: dict[str, str] = {
    FAKE_PROVIDER: (
        "the scripted fake provider (no model: the LLM agent's replies are scripted, e.g. "
        "`fake:calls=2`): the numbers measure the harness, not a model."
    ),
    "oracle": (
        "the oracle agent (no model: it answers from each task's gold SQL through the "
        "platform's tools): the numbers validate the tasks, graders and audit trail, not a "
        "model or the target's retrieval."
    ),
    "probe": (
        "the probe agent (no model: it answers a knowledge-trap task right only when the "
        "platform surfaced the task's deciding fact or a metric of the target's metric role "
        "answers it, any other task as the oracle does): the numbers measure the target's "
        "retrieval, not a model."
    ),
    "replay": (
        "the replay agent (no model is called: recorded episodes are played again): the "
        "numbers say whether the recorded runs reproduce, not how a model does now."
    ),
}
"""What the numbers of an arm mean for each agent kind that calls no model (and for the LLM
agent on the scripted ``fake`` provider, :data:`FAKE_PROVIDER`)."""


def agent_caveat_kind(agent: dict[str, Any]) -> str:
    """The :data:`AGENT_CAVEATS` key of a manifest arm's agent: its kind, or
    :data:`FAKE_PROVIDER` for an LLM agent on the ``fake`` provider."""
    kind = str(agent.get("kind", ""))
    return FAKE_PROVIDER if kind == "llm" and agent.get("provider") == "fake" else kind


def _agent_caveats(run: RunData) -> list[str]:
    """One caveat per model-less agent kind in the run (and the fake provider), naming its
    arms."""
    by_kind: dict[str, list[str]] = {}
    for arm in run.manifest.arms:
        kind = agent_caveat_kind(arm.get("agent") or {})
        if kind in AGENT_CAVEATS:
            by_kind.setdefault(kind, []).append(str(arm.get("name")))
    out = []
    for kind, arms in by_kind.items():
        who = f"Arm {arms[0]} uses" if len(arms) == 1 else f"Arms {', '.join(arms)} use"
        out.append(f"{who} {AGENT_CAVEATS[kind]}")
    return out


def _replay_caveats(run: RunData, frame: EpisodeFrame) -> list[str]:
    """Replay arms that re-grade recorded answers only, and replays that diverged."""
    out = []
    for arm in run.manifest.arms:
        agent = arm.get("agent") or {}
        if agent.get("kind") == "replay" and agent.get("mode") == "answer_only":
            out.append(
                f"Arm {arm.get('name')} replays in answer_only mode: its recorded answers were "
                "re-graded without calling the target, so its numbers say nothing about the "
                "target."
            )
    diverged = [e for e in frame.episodes if (e.harness_error or "").startswith("replay diverged")]
    if diverged:
        out.append(
            f"{len(diverged)} replayed episode(s) diverged (the target's tool outputs differ "
            "from the recording): excluded from scores as harness errors."
        )
    return out


def run_caveats(run: RunData, frame: EpisodeFrame, stats: RunStats) -> list[str]:
    """Caveats for ``report.md`` / ``report.html``, most important first."""
    out: list[str] = [*run.manifest.caveats, *run.notes]
    if not len(frame):
        out.append("The journal holds no episodes: there is nothing to compare yet.")
    if run.manifest.finished_at is None:
        out.append("The run has no finish time in its manifest: it may be incomplete.")
    agents = _agent_caveats(run)
    if run.manifest.no_model and not agents:
        agents.append(
            "No model was used (oracle, probe or replay agents): the numbers do not measure "
            "a model."
        )
    out.extend(agents)
    out.extend(_replay_caveats(run, frame))
    if stats.k < 3:
        out.append(
            f"k = {stats.k}: pass^k is close to plain accuracy and CIs only reflect task "
            "sampling; single-run numbers are not results (use k >= 3)."
        )
    small = sorted(
        {f"{g.dimension}={g.value}" for g in stats.groups if 0 < g.n_tasks < SMALL_SAMPLE_TASKS}
    )
    if small:
        shown = ", ".join(small[:8]) + (" ..." if len(small) > 8 else "")
        out.append(
            f"Fewer than {SMALL_SAMPLE_TASKS} tasks in {len(small)} breakdown(s) ({shown}): "
            "their confidence intervals are wide."
        )
    for g in stats.groups:
        if g.dimension == "overall" and g.pass_hat_k_tasks < g.n_tasks:
            out.append(
                f"Arm {g.arm}: {g.n_tasks - g.pass_hat_k_tasks} task(s) have fewer than "
                f"k = {stats.k} graded attempts and are left out of pass^k."
            )
    harness = int(frame.harness.sum())
    if harness:
        per_arm = ", ".join(
            f"{arm} {int((frame.harness & (frame.arm == i)).sum())}"
            for i, arm in enumerate(frame.arms)
            if (frame.harness & (frame.arm == i)).any()
        )
        out.append(
            f"{harness} episode(s) ended in a harness error ({per_arm}): excluded from accuracy, "
            "never counted as model failures."
        )
    retried = [ep for ep in frame.episodes if ep.transient_retries]
    if retried:
        arms = sorted({ep.arm for ep in retried})
        out.append(
            f"{len(retried)} episode(s) needed {sum(ep.transient_retries for ep in retried)} "
            f"retries of transient provider or target failures (429, 5xx, timeouts; arms "
            f"{', '.join(arms)}): their latency includes the backoff."
        )
    ungraded = int((frame.failure == "ungraded").sum())
    if ungraded:
        out.append(f"{ungraded} episode(s) have no grade (run `dabench grade`); they are excluded.")
    if run.tasks is None:
        out.append(
            "The run has no task snapshot (tasks.json or tasks.yaml): trap classes, expected "
            "tools and fast paths are unknown, so the trap breakdown, tool mismatches and "
            "fast-path rate are missing."
        )
    no_cost = int(np.isnan(frame.cost).sum())
    if no_cost and no_cost == len(frame):
        out.append("No episode has a cost: cost and quality per dollar are not reported.")
    elif no_cost:
        out.append(
            f"{no_cost} of {len(frame)} episode(s) have no cost: cost and quality per dollar "
            "cover only the rest."
        )
    bad_audit = sum(1 for ep in frame.episodes if ep.audit_ok is False)
    if bad_audit:
        out.append(
            f"{bad_audit} episode(s) have audit rows that disagree with the harness count: "
            "their efficiency figures are suspect."
        )
    harness_src = sum(1 for ep in frame.episodes if ep.audit_source == "harness")
    if harness_src:
        out.append(
            f"{harness_src} episode(s) take efficiency from the harness trace (the target has no "
            "audit store)."
        )
    judge = _judge_caveat(run, frame)
    if judge:
        out.append(judge)
    for d in stats.deltas:
        if d.dimension == "overall" and d.n_shared_tasks == 0:
            out.append(f"Arm {d.arm} shares no task with the baseline {d.baseline}: no delta.")
    return out
