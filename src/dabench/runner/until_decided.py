"""``dabench run ... --until-decided``: run in rounds and stop each arm once its comparison
with the baseline is decided (:mod:`dabench.stats.sequential`).

A round is one more attempt of every task by every arm still running. After each round the
run is graded, and each arm's paired delta against the baseline (the first arm) is fed to its
anytime-valid confidence sequence; an arm stops when the sequence excludes 0 or lies inside
``±min_delta``, the baseline stops when every other arm has, and nothing runs past the
experiment's ``k`` (the fixed design). Each round is a resumption of the same run directory,
so the journal, the audit checks and ``--resume`` work as for any run: the sequential state is
recomputed from the graded journal, never kept elsewhere, and written to ``sequential.json``
for the report.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from dabench.journal.records import Episode, Grade
from dabench.journal.sequential import ArmDecision, SequentialRecord, write_sequential
from dabench.journal.store import Journal, load_grades, read_manifest, write_manifest
from dabench.runner.experiment import Experiment
from dabench.runner.run import ExperimentRun, RunSummary
from dabench.stats.sequential import PairedSequence


def decide(
    episodes: list[Episode], grades: dict[str, Grade], baseline: str, arms: list[str], *,
    alpha: float, min_delta: float | None, rounds: int,
) -> list[ArmDecision]:  # fmt: skip
    """Each arm's decision after ``rounds`` rounds, recomputed from the graded journal: per
    round, the paired differences of the tasks both arms answered without a harness error."""
    passed: dict[tuple[str, str, int], float] = {}
    for ep in episodes:
        g = grades.get(ep.key)
        if g is not None and not g.excluded:
            passed[(ep.arm, ep.task_id, ep.attempt)] = 1.0 if g.passed else 0.0
    out = [ArmDecision(arm=baseline, decision="baseline", rounds=rounds)]
    for arm in arms:
        if arm == baseline:
            continue
        seq = PairedSequence(alpha=alpha, min_delta=min_delta)
        decision = ArmDecision(arm=arm, decision="running", rounds=0)
        for r in range(rounds):
            diffs = [
                passed[(arm, task, a)] - base
                for (b_arm, task, a), base in passed.items()
                if b_arm == baseline and a == r and (arm, task, a) in passed
            ]
            if not diffs:
                break
            state = seq.add_round(np.asarray(diffs))
            decision.rounds = r + 1
            decision.low, decision.high = state.low, state.high
            decision.history.append((state.low, state.high))
            decision.decision = state.decision
            if state.decision != "running":
                break
        out.append(decision)
    return out


def _merge(total: RunSummary, part: RunSummary) -> None:
    total.planned += part.planned
    total.finished += part.finished
    total.statuses.update(part.statuses)
    total.audit_gaps.extend(part.audit_gaps)
    total.harness_errors.extend(part.harness_errors)
    total.tool_calls += part.tool_calls
    total.episodes_wall_s += part.episodes_wall_s
    total.episodes_cpu_s += part.episodes_cpu_s
    for arm, counts in part.per_arm.items():
        total.per_arm.setdefault(arm, Counter()).update(counts)
    for name in part.skipped_protocols:
        if name not in total.skipped_protocols:
            total.skipped_protocols.append(name)


async def run_until_decided(
    exp: Experiment,
    run_dir: Path,
    *,
    experiment_dir: Path,
    resume: bool,
    console: Console,
    progress: bool,
    grade: Callable[[Path], Awaitable[Any]],
    alpha: float = 0.05,
    min_delta: float | None = None,
    execute: Callable[[ExperimentRun], Awaitable[RunSummary]] | None = None,
) -> RunSummary:
    """Run ``exp`` round by round until every arm's comparison is decided (or ``exp.k``
    rounds); ``grade`` grades the run directory after each round."""
    max_rounds = exp.k
    names = [a.name for a in exp.arms]
    baseline = names[0]
    total = RunSummary(run_dir=run_dir, no_model=not exp.uses_model())
    active = set(names)
    record: SequentialRecord | None = None
    for r in range(max_rounds):
        round_exp = exp.model_copy(
            update={"k": r + 1, "arms": [a for a in exp.arms if a.name in active]}
        )
        execution = ExperimentRun(
            round_exp, run_dir, experiment_dir=experiment_dir, resume=resume or r > 0,
            console=console, progress=progress,
        )  # fmt: skip
        part = await (execute(execution) if execute else execution.execute())
        _merge(total, part)
        total.already_done = part.already_done if r == 0 else total.already_done
        _pin_design(run_dir, max_rounds)
        await grade(run_dir)
        episodes = Journal(run_dir).load()
        grades = {g.key: g for g in load_grades(run_dir)}
        decisions = decide(
            episodes, grades, baseline, names, alpha=alpha, min_delta=min_delta, rounds=r + 1
        )
        running = {d.arm for d in decisions if d.decision == "running"}
        record = SequentialRecord(
            alpha=alpha, min_delta=min_delta, baseline=baseline, max_rounds=max_rounds,
            rounds_run=r + 1, arms=decisions, episodes_run=len(episodes),
            episodes_fixed_design=_fixed_design(episodes, max_rounds),
        )  # fmt: skip
        write_sequential(run_dir, record)
        summary = ", ".join(f"{d.arm} {d.decision}" for d in decisions if d.arm != baseline)
        console.print(f"round {r + 1} of {max_rounds}: {summary}", highlight=False)
        if not running:
            break
        active = running | {baseline}
    if record is not None and record.rounds_run == max_rounds:
        for d in record.arms:
            if d.decision == "running":
                d.decision = "undecided"
        write_sequential(run_dir, record)
    return total


def _fixed_design(episodes: list[Episode], max_rounds: int) -> int:
    """Episodes of the fixed design: every (arm, task) pair that ran, ``max_rounds`` times."""
    return len({(e.arm, e.task_id) for e in episodes}) * max_rounds


def _pin_design(run_dir: Path, max_rounds: int) -> None:
    """Keep the manifest's k at the fixed design's (a round runs with a smaller k)."""
    manifest = read_manifest(run_dir, with_secrets=True)
    if manifest.k == max_rounds:
        return
    experiment = {**manifest.experiment, "k": max_rounds}
    write_manifest(run_dir, manifest.model_copy(update={"k": max_rounds, "experiment": experiment}))
