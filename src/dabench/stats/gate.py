"""The regression gate: compare a run against a baseline run, suite by suite, per arm.

A row regresses when the candidate's accuracy or pass^k drops by more than the suite's
threshold (percentage points), its mean tool calls per episode grow by more than the
allowed ratio, or the enrichment it was delivered shrinks below the allowed ratio.
Runs of different arms, task sets or worlds are refused unless forced.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dabench import safe_yaml
from dabench.errors import UserInputError
from dabench.fields import FiniteNonNegative, PositiveFinite
from dabench.stats.aggregates import task_table
from dabench.stats.bootstrap import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    group_rng,
    percentile_interval,
    resampled_sums,
)
from dabench.stats.compute import compute_stats
from dabench.stats.frame import EpisodeFrame, build_frame
from dabench.stats.model import Dimension, GroupStats
from dabench.stats.rundir import RunData
from dabench.tasks.model import Suite
from dabench.tasks.yaml_source import validation_message


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _StrictFile(BaseModel):
    """Hand-written file content: unknown keys and coerced types (``"5"``, ``yes``) refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


Points = Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)]
"""A drop in percentage points (0-100)."""


class SuiteThresholds(_StrictFile):
    """Limits for one suite (``None`` in an override: inherit the default)."""

    max_accuracy_drop: Points | None = None
    """Largest allowed accuracy drop, in percentage points."""
    max_pass_hat_k_drop: Points | None = None
    """Largest allowed pass^k drop, in percentage points."""
    max_tool_call_ratio: PositiveFinite | None = None
    """Largest allowed candidate / baseline ratio of mean tool calls per episode."""
    min_enrichment_ratio: FiniteNonNegative | None = None
    """Smallest allowed candidate / baseline ratio of enrichment tokens delivered per episode
    (checked only where the baseline delivered enrichment): catches a knowledge layer that
    silently stopped enriching."""
    require_significant: bool | None = None
    """Count a drop only when the paired 95% CI of the accuracy delta excludes 0."""


GateSuite = Literal[Suite, "overall"]
"""A suite the gate compares, or ``overall`` (the row over all suites)."""


class Thresholds(_StrictFile):
    """The thresholds file: defaults plus per-suite overrides."""

    default: SuiteThresholds
    suites: dict[GateSuite, SuiteThresholds] = Field(default_factory=dict)

    def for_suite(self, suite: str) -> SuiteThresholds:
        """The default merged with the suite's overrides."""
        merged = self.default.model_dump()
        override = self.suites.get(suite)  # type: ignore[call-overload]
        if override is not None:
            merged.update({k: v for k, v in override.model_dump().items() if v is not None})
        return SuiteThresholds(**merged)


def default_thresholds_text() -> str:
    """The thresholds file shipped with the package."""
    return resources.files("dabench.stats").joinpath("thresholds.yaml").read_text("utf-8")


def load_thresholds(path: Path | None = None) -> Thresholds:
    """Read a thresholds YAML (the packaged defaults when ``path`` is None) through
    :mod:`dabench.safe_yaml`; errors name the file, line and field."""
    source = str(path) if path else "dabench/stats/thresholds.yaml"
    try:
        text = safe_yaml.read_text(path) if path else default_thresholds_text()
    except OSError as exc:
        raise UserInputError(f"{source}: cannot read thresholds file ({exc.strerror})") from exc
    root = safe_yaml.compose_text(text, source)
    if root is None:
        raise UserInputError(f"{source}: empty thresholds file (expected default: and suites:)")
    raw = safe_yaml.construct(root, source)
    if not isinstance(raw, dict):
        raise UserInputError(
            f"{source}:{safe_yaml.line_of(root)}: a thresholds file is a mapping "
            "(default: and suites:)"
        )
    try:
        return Thresholds.model_validate(raw)
    except ValidationError as exc:
        raise UserInputError(validation_message(exc, Path(source), root, "thresholds")) from exc


class GateRow(_Strict):
    """One arm x suite comparison."""

    arm: str
    suite: str
    baseline_accuracy: float | None
    accuracy: float | None
    accuracy_drop: float | None
    """Percentage points (positive = worse)."""
    accuracy_delta_low: float | None = None
    accuracy_delta_high: float | None = None
    """Paired 95% CI of candidate - baseline accuracy over shared tasks, in points."""
    baseline_pass_hat_k: float | None
    pass_hat_k: float | None
    pass_hat_k_drop: float | None
    baseline_tool_calls: float | None
    tool_calls: float | None
    tool_call_ratio: float | None
    baseline_enrichment: float | None = None
    enrichment: float | None = None
    """Mean enrichment tokens delivered per episode."""
    enrichment_ratio: float | None = None
    thresholds: SuiteThresholds
    regressions: list[str] = Field(default_factory=list)


class GateResult(_Strict):
    """The outcome of ``dabench compare``."""

    run_id: str
    baseline_run_id: str
    rows: list[GateRow]
    warnings: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    """Why the runs are not comparable (refused unless forced)."""

    @property
    def regressed(self) -> bool:
        """True when any row regressed."""
        return any(r.regressions for r in self.rows)


def _arm_specs(run: RunData) -> dict[str, dict[str, Any]]:
    return {str(a.get("name")): a for a in run.manifest.arms if a.get("name")}


def comparability(run: RunData, base: RunData) -> tuple[list[str], list[str]]:
    """(problems that refuse the comparison, warnings) for two runs."""
    problems: list[str] = []
    warnings: list[str] = []
    arms, base_arms = set(run.arm_names), set(base.arm_names)
    if arms != base_arms:
        problems.append(f"different arms: run has {sorted(arms)}, baseline has {sorted(base_arms)}")
    if run.manifest.task_set_hash != base.manifest.task_set_hash:
        problems.append(
            f"different task sets: {run.manifest.task_set_hash} vs {base.manifest.task_set_hash}"
        )
    if run.manifest.world_hash != base.manifest.world_hash:
        problems.append(
            f"different worlds: {run.manifest.world_hash} vs {base.manifest.world_hash}"
        )
    specs, base_specs = _arm_specs(run), _arm_specs(base)
    for arm in sorted(arms & base_arms):
        mine, theirs = specs.get(arm, {}), base_specs.get(arm, {})
        if mine.get("agent") != theirs.get("agent"):
            problems.append(f"arm {arm}: different agent settings (model, provider or agent)")
        if mine.get("target") != theirs.get("target"):
            warnings.append(
                f"arm {arm}: the target/profile differs from the baseline's "
                "(this is what the gate measures)"
            )
    if run.manifest.k != base.manifest.k:
        warnings.append(f"k differs: {run.manifest.k} vs baseline {base.manifest.k}")
    return problems, warnings


def _paired_accuracy(
    frame: EpisodeFrame,
    mask: np.ndarray,
    base_frame: EpisodeFrame,
    base_mask: np.ndarray,
    label: str,
    seed: int,
    resamples: int,
) -> tuple[float | None, float | None]:
    mine, theirs = task_table(frame, mask), task_table(base_frame, base_mask)
    mine_acc = dict(
        zip((frame.task_ids[t] for t in mine.task), mine.accuracy.tolist(), strict=True)
    )
    theirs_acc = dict(
        zip((base_frame.task_ids[t] for t in theirs.task), theirs.accuracy.tolist(), strict=True)
    )
    shared = sorted(mine_acc.keys() & theirs_acc.keys())
    if not shared or resamples <= 0:
        return None, None
    d = np.array([mine_acc[t] - theirs_acc[t] for t in shared])[:, None]
    sums = resampled_sums(d, resamples, group_rng(seed, label))
    low, high = percentile_interval(sums[:, 0] / len(shared), 0.95)
    return (
        None if low is None else 100 * low,
        None if high is None else 100 * high,
    )


def _pts(value: float | None) -> float | None:
    return None if value is None else 100 * value


def _row(
    arm: str,
    suite: str,
    mine: GroupStats | None,
    theirs: GroupStats | None,
    limits: SuiteThresholds,
    ci: tuple[float | None, float | None],
) -> GateRow:
    acc, base_acc = (_pts(g.accuracy.estimate) if g else None for g in (mine, theirs))
    ph, base_ph = (_pts(g.pass_hat_k.estimate) if g else None for g in (mine, theirs))
    calls, base_calls = (g.efficiency.tool_calls_mean if g else None for g in (mine, theirs))
    acc_drop = None if acc is None or base_acc is None else base_acc - acc
    ph_drop = None if ph is None or base_ph is None else base_ph - ph
    ratio = calls / base_calls if calls is not None and base_calls else None
    enrich, base_enrich = (
        g.efficiency.enrichment_tokens_mean if g else None for g in (mine, theirs)
    )
    enrich_ratio = enrich / base_enrich if enrich is not None and base_enrich else None
    regressions: list[str] = []
    significant = not limits.require_significant or (ci[1] is not None and ci[1] < 0)
    acc_limit, ph_limit, ratio_limit = (
        limits.max_accuracy_drop,
        limits.max_pass_hat_k_drop,
        limits.max_tool_call_ratio,
    )
    if acc_drop is not None and acc_limit is not None and acc_drop > acc_limit and significant:
        regressions.append(f"accuracy dropped {acc_drop:.1f} pts (limit {acc_limit:g})")
    if ph_drop is not None and ph_limit is not None and ph_drop > ph_limit and significant:
        regressions.append(f"pass^k dropped {ph_drop:.1f} pts (limit {ph_limit:g})")
    if ratio is not None and ratio_limit is not None and ratio > ratio_limit:
        regressions.append(f"tool calls x{ratio:.2f} of baseline (limit x{ratio_limit:g})")
    floor = limits.min_enrichment_ratio
    if enrich_ratio is not None and floor is not None and enrich_ratio < floor:
        regressions.append(f"enrichment tokens x{enrich_ratio:.2f} of baseline (floor x{floor:g})")
    if mine is None:
        regressions.append("no graded episodes in the run for this suite")
    return GateRow(
        arm=arm,
        suite=suite,
        baseline_accuracy=base_acc,
        accuracy=acc,
        accuracy_drop=acc_drop,
        accuracy_delta_low=ci[0],
        accuracy_delta_high=ci[1],
        baseline_pass_hat_k=base_ph,
        pass_hat_k=ph,
        pass_hat_k_drop=ph_drop,
        baseline_tool_calls=base_calls,
        tool_calls=calls,
        tool_call_ratio=ratio,
        baseline_enrichment=base_enrich,
        enrichment=enrich,
        enrichment_ratio=enrich_ratio,
        thresholds=limits,
        regressions=regressions,
    )


def compare_runs(
    run: RunData,
    base: RunData,
    thresholds: Thresholds,
    *,
    force: bool = False,
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
) -> GateResult:
    """Compare ``run`` against ``base``; raises :class:`UserInputError` when not comparable
    (unless ``force``)."""
    problems, warnings = comparability(run, base)
    if problems and not force:
        raise UserInputError(
            "refusing to compare: " + "; ".join(problems) + " (use --force to compare anyway)"
        )
    frame, base_frame = build_frame(run), build_frame(base)
    stats = compute_stats(run, resamples=0, frame=frame)
    base_stats = compute_stats(base, resamples=0, frame=base_frame)
    rows: list[GateRow] = []
    for arm in [a for a in base_stats.arms if a in stats.arms]:
        code, base_code = frame.arms.index(arm), base_frame.arms.index(arm)
        suites = ["overall"] + [
            g.value for g in base_stats.groups if g.arm == arm and g.dimension == "suite"
        ]
        for suite in suites:
            dim: Dimension = "overall" if suite == "overall" else "suite"
            value = "all" if suite == "overall" else suite
            mask = frame.arm == code
            base_mask = base_frame.arm == base_code
            if suite != "overall":
                mask = mask & (frame.suite == suite)
                base_mask = base_mask & (base_frame.suite == suite)
            ci = _paired_accuracy(
                frame, mask, base_frame, base_mask, f"gate|{arm}|{suite}", seed, resamples
            )
            rows.append(
                _row(
                    arm,
                    suite,
                    stats.group(arm, dim, value),
                    base_stats.group(arm, dim, value),
                    thresholds.for_suite(suite),
                    ci,
                )
            )
    return GateResult(
        run_id=run.manifest.run_id,
        baseline_run_id=base.manifest.run_id,
        rows=rows,
        warnings=warnings,
        problems=problems,
    )
