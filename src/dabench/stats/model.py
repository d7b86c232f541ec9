"""``stats.json``: the statistics of one run, per arm and per breakdown.

Every number here is documented in ``docs/statistics.md``. Rates are fractions in 0..1
(reports print them as percentages); a ``None`` means "not measurable in this run" (no
cost recorded, no fast-path tasks, fewer than ``k`` attempts...), never zero.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Dimension = Literal["overall", "suite", "category", "difficulty", "trap_class"]
"""The breakdowns statistics are computed for (each per arm)."""

FAILURE_CLASSES: tuple[str, ...] = (
    "passed",
    "wrong_answer",
    "no_final_answer",
    "budget_exhausted",
    "gate_refusal_loop",
    "tool_error",
    "timeout",
    "harness_error",
    "ungraded",
)
"""The failure taxonomy (plus ``passed`` and ``ungraded``), in report order."""

STATS_SCHEMA_VERSION = 1


TtftSources = Literal["measured", "reported", "mixed"]
"""Where an arm's times to first token come from."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Interval(_Record):
    """A point estimate with its bootstrap confidence interval."""

    estimate: float | None = None
    low: float | None = None
    high: float | None = None


class Consistency(_Record):
    """Spread of the per-episode overall score over completed episodes."""

    n: int = 0
    sd: float | None = None
    min: float | None = None
    max: float | None = None
    median: float | None = None


class Efficiency(_Record):
    """Efficiency figures over the non-excluded episodes of a group (S4)."""

    tool_calls_median: float | None = None
    tool_calls_p90: float | None = None
    tool_calls_mean: float | None = None
    errors_before_success_mean: float | None = None
    """Tool errors per passed episode (errors made on the way to a correct answer)."""
    errors_before_success_median: float | None = None
    wall_s_median: float | None = None
    wall_s_p90: float | None = None
    latency_ok_s: float | None = None
    """Mean wall clock over completed episodes (no timeout, no failure status)."""
    latency_all_s: float | None = None
    """Mean wall clock over all episodes, timeouts counted at the episode time limit."""
    ttft_ms_p50: float | None = None
    """Median time to first token (ms) over completed episodes that recorded one; ``None``
    when none did (targets that do not stream, e.g. LLM-provider arms)."""
    ttft_ms_p95: float | None = None
    """95th percentile of the same time-to-first-token values (linear interpolation)."""
    ttft_n: int = 0
    """Completed episodes with a time to first token (the sample behind ``ttft_ms_*``)."""
    ttft_source: TtftSources | None = None
    """Where the arm's TTFT values come from: ``measured`` by dabench (streamed), ``reported``
    by the target (Kibana's ``time_to_first_token``) or ``mixed``; the two are different
    figures and are never compared across arms without saying so."""
    tokens_mean: float | None = None
    """Mean tokens per episode over the episodes whose usage is known; ``None`` when none."""
    tokens_total: int = 0
    tokens_n: int = 0
    """Episodes whose usage is known (the sample behind ``tokens_mean``)."""
    enrichment_tokens_mean: float | None = None
    enrichment_tokens_total: int = 0
    ves: float | None = None
    """Efficiency-adjusted accuracy (VES-style, see docs/statistics.md)."""
    fast_path_rate: float | None = None
    """Share of episodes of fast-path tasks that touched a pre-aggregated dataset."""
    fast_path_episodes: int = 0
    tool_exec_rate: float | None = None
    """Share of tool calls that executed without error."""
    tokens_per_tool_call: float | None = None
    retries_total: int = 0
    retries_mean: float | None = None
    cost_total_usd: float | None = None
    cost_mean_usd: float | None = None
    quality_per_dollar: float | None = None
    quality_per_second: float | None = None


MIN_GRADED_SHARE = 0.8
"""Below this share of graded episodes (the rest harness errors), an arm's accuracy is never
headlined bare: reports say "n of m graded" instead (the graded few are not the arm)."""


def headline_ok(graded: int, total: int) -> bool:
    """True when ``graded`` of ``total`` episodes are enough to headline an accuracy."""
    return total > 0 and graded / total >= MIN_GRADED_SHARE


class GroupStats(_Record):
    """Statistics of one arm over one breakdown value (e.g. arm a2, suite s3)."""

    arm: str
    dimension: Dimension
    value: str
    """The suite / category / difficulty / trap class; ``all`` for ``overall``."""
    n_tasks: int
    n_episodes: int
    """Graded, non-excluded episodes."""
    n_excluded: int
    """Harness errors and ungraded episodes (reported, never graded as failures)."""
    accuracy: Interval
    pass_hat_k: Interval
    """pass^k for the run's k over tasks with at least k attempts."""
    pass_hat_k_tasks: int = 0
    """Tasks with at least k graded attempts (the pass^k denominator)."""
    pass_at_k: float | None = None
    pass_hat_curve: dict[str, float] = Field(default_factory=dict)
    """pass^j for j = 1..k (keys are j as strings)."""
    score: Interval
    """Mean per-episode overall score (task-averaged)."""
    efficiency: Efficiency
    consistency: Consistency
    failures: dict[str, int] = Field(default_factory=dict)


class Delta(_Record):
    """An arm against the baseline arm on their shared tasks (paired bootstrap)."""

    arm: str
    baseline: str
    dimension: Dimension
    value: str
    n_shared_tasks: int
    accuracy: Interval
    pass_hat_k: Interval
    score: Interval


class FunnelStep(_Record):
    """One step of the S5 lifecycle funnel of one arm."""

    name: str
    episodes: int
    """Protocol episodes that ran this step."""
    passed: int
    pass_rate: float | None
    reached: int
    """Protocol episodes that passed this step and every step before it."""


class LifecycleRate(_Record):
    """One S5 lifecycle metric of one arm: ``count`` of ``n`` tagged protocol steps."""

    metric: str
    count: int
    """The numerator: passed steps (failed duplicate checks for ``duplicate``)."""
    n: int
    """Protocol steps with a verdict tagged with this metric."""
    rate: float | None


class ProtocolPassK(_Record):
    """pass^k and pass@k of one S5 protocol on one arm (a protocol passes when every step
    with a verdict passed)."""

    protocol: str
    attempts: int
    passed: int
    pass_hat_k: float | None = None
    """``None`` with fewer than k graded attempts."""
    pass_at_k: float | None = None


class ArmLifecycle(_Record):
    """The S5 lifecycle metrics of one arm (see :mod:`dabench.stats.lifecycle`)."""

    k: int
    metrics: list[LifecycleRate] = Field(default_factory=list)
    protocols: list[ProtocolPassK] = Field(default_factory=list)
    pass_hat_k: float | None = None
    """Mean pass^k over the protocols with at least k graded attempts."""


class ArmSummary(_Record):
    """Headline numbers of one arm (the report's ranking and arm card)."""

    arm: str
    target: str = ""
    agent: str = ""
    provider: str | None = None
    model: str | None = None
    episodes: int
    excluded: int
    completion_rate: float | None
    """Share of episodes that completed (no timeout, budget exhaustion, missing answer)."""
    reliability: float | None
    adjusted_overall: float | None
    """Seed-003 aggregate: difficulty-weighted overall score with the failure penalty."""
    score_means: dict[str, float] = Field(default_factory=dict)
    """Mean of each per-episode score (correctness, groundedness, tool...)."""
    badges: dict[str, int] = Field(default_factory=dict)
    """Counts: timeouts, tool_mismatches, errors (tool errors), harness_errors."""


DiscriminationFlag = Literal[
    "ok", "low", "negative", "all_pass", "all_fail", "too_few", "undefined"
]


class TaskDiscrimination(_Record):
    """How well one task separates the respondents of one or more runs
    (:mod:`dabench.stats.discrimination`)."""

    task: str
    suite: str
    difficulty: str
    """The task's declared difficulty label (easy, medium, hard, expert)."""
    respondents: int
    """(run, arm, attempt) triples with a graded episode of this task."""
    passed: int
    pass_rate: float
    per_arm: dict[str, float] = Field(default_factory=dict)
    """Pass rate of each arm (over all its attempts and runs)."""
    point_biserial: float | None = None
    """Corrected item-rest correlation; ``None`` when it cannot be estimated (see ``flag``)."""
    information: float = 0.0
    """``p (1 - p) r²`` with ``r`` clipped at 0: one episode's information (module docstring)."""
    flag: DiscriminationFlag


class RunStats(_Record):
    """``stats.json``: all statistics of one run."""

    schema_version: int = STATS_SCHEMA_VERSION
    run_id: str
    seed: int
    """Seed of every bootstrap (each group draws from ``default_rng([seed, crc32(label)])``)."""
    resamples: int
    confidence: float
    k: int
    baseline_arm: str
    arms: list[str]
    world_hash: str
    task_set_hash: str
    groups: list[GroupStats]
    deltas: list[Delta]
    summaries: list[ArmSummary]
    funnel: dict[str, list[FunnelStep]] = Field(default_factory=dict)
    lifecycle: dict[str, ArmLifecycle] = Field(default_factory=dict)
    """Per arm with protocol episodes: the S5 lifecycle metrics."""
    caveats: list[str] = Field(default_factory=list)
    discrimination: list[TaskDiscrimination] = Field(default_factory=list)
    """Per task: pass rates per arm, item-rest point-biserial and flags (one run)."""

    def group(self, arm: str, dimension: Dimension, value: str = "all") -> GroupStats | None:
        """The group stats of one arm and breakdown value, if present."""
        for g in self.groups:
            if g.arm == arm and g.dimension == dimension and g.value == value:
                return g
        return None

    def summary(self, arm: str) -> ArmSummary | None:
        """The summary of one arm, if present."""
        return next((s for s in self.summaries if s.arm == arm), None)
