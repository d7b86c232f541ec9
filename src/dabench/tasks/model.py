"""The task and protocol schema: what a suite file holds.

Suites are YAML lists of :class:`Task` (S1-S4) or :class:`Protocol` (S5). Ground truth is
never typed by hand: numeric truths come from ``grading.truth_sql`` evaluated against the
world by ``dabench tasks lock``; entity truths name catalog ids that must exist.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Suite = Literal["s1", "s2", "s3", "s4", "s5"]
Difficulty = Literal["easy", "medium", "hard", "expert"]
Category = Literal[
    "single_tool",
    "filters",
    "format",
    "multi_step",
    "multi_turn",
    "adversarial",
    "cross_table",
    "temporal",
    "discovery",
    "analytical",
    "knowledge_trap",
    "lifecycle",
]
GradingKind = Literal["numeric", "entity", "exec_sql", "refusal", "abstain", "format", "judge"]
ExecSqlMode = Literal["set", "multiset", "ordered"]
FormatKind = Literal["json", "single_number", "bullets", "markdown_table"]

DIFFICULTY_WEIGHT: dict[str, float] = {"easy": 0.7, "medium": 1.0, "hard": 1.3, "expert": 1.6}
"""Difficulty multipliers from seed 003."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FormatSpec(_Spec):
    """A format constraint on the answer."""

    kind: FormatKind
    n: int | None = None
    """Exact number of bullets for ``bullets``."""
    columns: list[str] = Field(default_factory=list)
    """Required header columns for ``markdown_table``; required keys for ``json``."""


class Grading(_Spec):
    """How an episode of this task is graded (deterministic first)."""

    kind: GradingKind
    truth_sql: str | None = None
    """SQL over the world whose result is the ground truth (numeric: one cell; exec_sql:
    the whole result)."""
    naive_sql: str | None = None
    """For traps: the plausible-but-wrong answer; validation requires the grader to reject it."""
    truth_sql_dialects: dict[Literal["postgres"], str] = Field(default_factory=dict)
    """``truth_sql`` written for another engine, where the DuckDB SQL cannot be translated
    (``dabench tasks validate --warehouse`` uses it on an exported world)."""
    entities: list[str] = Field(default_factory=list)
    """For ``entity``: catalog ids any of which is a correct answer."""
    aliases: list[str] = Field(default_factory=list)
    """Other spellings accepted for the entities."""
    wrong_aliases: list[str] = Field(default_factory=list)
    """Known-wrong answers (the deprecated table, the staging copy); naming one fails."""
    tolerance_abs: float = 0.0
    tolerance_rel: float = 0.005
    exec_sql_mode: ExecSqlMode = "set"
    format: FormatSpec | None = None
    also_numeric: bool = False
    """For ``format`` tasks: also check the number against ``truth_sql``."""

    @model_validator(mode="after")
    def _check_kind_fields(self) -> Grading:
        if self.kind in ("numeric", "exec_sql") and not self.truth_sql:
            raise ValueError(f"grading.kind {self.kind!r} needs grading.truth_sql")
        if self.kind == "entity" and not self.entities:
            raise ValueError("grading.kind 'entity' needs grading.entities (catalog ids)")
        if self.kind == "format" and self.format is None:
            raise ValueError("grading.kind 'format' needs grading.format")
        return self


class Task(_Spec):
    """One question (or a multi-turn conversation) with how to grade it."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    suite: Suite
    category: Category
    difficulty: Difficulty
    prompt: str | None = None
    turns: list[str] = Field(default_factory=list)
    """Multi-turn: the user's messages in order; the last turn's answer is graded."""
    arms: list[str] = Field(default_factory=list)
    """Arm names this task applies to; empty means every arm."""
    trap_classes: list[str] = Field(default_factory=list)
    budget: int = Field(default=30, ge=1, le=200)
    """Tool-call budget for one episode."""
    expected_tools: list[str] = Field(default_factory=list)
    """Tools of which at least one should be used (tool-overlap score)."""
    fast_path: list[str] = Field(default_factory=list)
    """Pre-aggregated dataset ids whose use counts as finding the fast path."""
    rubric: list[str] = Field(default_factory=list)
    """Rubric item ids the judge checks (e.g. ``caveat.cents``)."""
    grading: Grading
    tags: list[str] = Field(default_factory=list)
    smoke: bool = False
    """Member of the smoke subset."""

    @model_validator(mode="after")
    def _check_prompt(self) -> Task:
        if bool(self.prompt) == bool(self.turns):
            raise ValueError("a task needs exactly one of 'prompt' or 'turns'")
        return self

    @property
    def messages(self) -> list[str]:
        """The user's messages in order (one for a single-turn task)."""
        return [self.prompt] if self.prompt else list(self.turns)


ProtocolStepKind = Literal["episode", "review", "verify"]
LifecycleMetric = Literal[
    "capture", "recall", "surfacing", "promotion", "transfer", "update", "duplicate", "abstention"
]


class ProtocolStep(_Spec):
    """One step of a lifecycle protocol."""

    kind: ProtocolStepKind
    name: str
    """Step name used in metrics: teach, recall, promote, transfer, supersede, abstain."""
    identity: str = "teacher"
    """Which identity acts: ``teacher``, ``learner`` or ``reviewer``."""
    prompt: str | None = None
    grading: Grading | None = None
    action: dict[str, object] = Field(default_factory=dict)
    """For ``review``: the scripted apply_knowledge call (sink, target)."""
    expect: dict[str, object] = Field(default_factory=dict)
    """For ``verify``: the state the admin API must show."""
    fact: str | None = None
    """The fact this step teaches (a teach or correction episode) or needs (recall, transfer);
    for an abstain step the fact that was never taught. Default: the protocol's ``fact``."""
    supersedes: bool = False
    """An ungraded ``episode`` step that corrects the fact taught earlier: the old insight must
    end ``superseded``, not duplicated."""
    metric: LifecycleMetric | None = None
    """The lifecycle metric this step's verdict counts toward (docs/suites.md)."""
    budget: int = Field(default=30, ge=1, le=200)
    """Tool-call budget of an ``episode`` step."""

    @model_validator(mode="after")
    def _check_kind_fields(self) -> ProtocolStep:
        if self.kind == "episode" and not self.prompt:
            raise ValueError(f"episode step {self.name!r} needs a prompt")
        if self.kind == "review" and not (self.action.get("sink") and self.action.get("target")):
            raise ValueError(f"review step {self.name!r} needs action.sink and action.target")
        if self.kind == "verify" and not self.expect:
            raise ValueError(f"verify step {self.name!r} needs expect")
        return self


class Protocol(_Spec):
    """An S5 multi-episode lifecycle script with two identities."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    suite: Literal["s5"] = "s5"
    category: Category = "lifecycle"
    difficulty: Difficulty = "hard"
    fact: str
    """The fact taught, in words."""
    related_ids: list[str] = Field(default_factory=list)
    """Dataset or column ids the fact is about (passed to memory_capture)."""
    steps: list[ProtocolStep]
    arms: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    smoke: bool = False


class Truth(_Spec):
    """The ground truth of one task, computed from the world by SQL."""

    kind: GradingKind
    value: float | None = None
    """The number, for numeric truths (the first cell of ``truth_sql``)."""
    columns: list[str] = Field(default_factory=list)
    rows: list[list[object]] = Field(default_factory=list)
    """The full result of ``truth_sql`` (exec_sql, and for display)."""
    naive_value: float | None = None
    """The first cell of ``naive_sql`` for trap tasks."""
    entities: list[str] = Field(default_factory=list)
    task_hash: str | None = None
    """Canonical hash of the task (or protocol) the truth was computed for; a lock whose
    task hash differs from the loaded task's is stale."""


class TruthLock(_Spec):
    """``tasks.lock.json``: every task's truth, bound to one world and one task set."""

    world_hash: str
    task_set_hash: str
    truths: dict[str, Truth]
    """Task id (or ``<protocol id>/<step name>``) -> truth."""
