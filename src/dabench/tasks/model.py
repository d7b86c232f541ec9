"""The task and protocol schema: what a suite file holds.

Suites are YAML lists of :class:`Task` (S1-S4, S6) or :class:`Protocol` (S5, S6). Ground truth is
never typed by hand: numeric truths come from ``grading.truth_sql`` evaluated against the
world by ``dabench tasks lock``; entity truths name catalog ids that must exist.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from dabench.world.fingerprint import DataFingerprint

Suite = Literal["s1", "s2", "s3", "s4", "s5", "s6"]
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


ID_PATTERN = r"^[a-z0-9](?:[a-z0-9_.-]*[a-z0-9])?$"
"""Task, protocol and step ids: lower case letters, digits, ``_ . -``; starts and ends with a
letter or digit."""

ItemId = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=100)]
"""A well-formed id (at most 100 characters)."""


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


NonBlank = Annotated[str, AfterValidator(_non_blank)]
"""A string with at least one non-whitespace character (prompts, SQL, names)."""

Tolerance = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
"""A grading tolerance: finite and non-negative (``.inf`` would accept every answer)."""


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _AuthoredSpec(_Spec):
    """Hand-written suite content: types are strict (``"30"`` is not a budget, ``yes`` is not
    a boolean, ``true`` is not a number)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class FormatSpec(_AuthoredSpec):
    """A format constraint on the answer."""

    kind: FormatKind
    n: int | None = Field(default=None, ge=1)
    """Exact number of bullets for ``bullets``."""
    columns: list[NonBlank] = Field(default_factory=list)
    """Required header columns for ``markdown_table``; required keys for ``json``."""


class Variant(_AuthoredSpec):
    """A careless reading of a numeric task: SQL whose answer must fall outside the task's
    tolerance (``dabench tasks validate``, docs/suites.md "Tolerance honesty")."""

    id: ItemId
    """Unique within the task; a policy reading's id (``revenue.gross``) replaces that
    derived variant, for a truth whose form the policy's rewrite does not know."""
    reading: NonBlank
    """What the careless analyst does, in words."""
    sql: NonBlank
    """SQL over the world whose first cell is that analyst's answer."""


class Grading(_AuthoredSpec):
    """How an episode of this task is graded (deterministic first)."""

    kind: GradingKind
    truth_sql: NonBlank | None = None
    """SQL over the world whose result is the ground truth (numeric: one cell; exec_sql:
    the whole result)."""
    naive_sql: NonBlank | None = None
    """For traps: the plausible-but-wrong answer; validation requires the grader to reject it."""
    truth_sql_dialects: dict[Literal["postgres", "sqlite"], NonBlank] = Field(default_factory=dict)
    """``truth_sql`` written for another engine, where the DuckDB SQL cannot be translated
    (``dabench tasks validate --warehouse`` uses it on an exported world)."""
    entities: list[NonBlank] = Field(default_factory=list)
    """For ``entity``: catalog ids any of which is a correct answer."""
    aliases: list[NonBlank] = Field(default_factory=list)
    """Other spellings accepted for the entities."""
    wrong_aliases: list[NonBlank] = Field(default_factory=list)
    """Known-wrong answers (the deprecated table, the staging copy); naming one fails."""
    tolerance_abs: Tolerance = 0.0
    tolerance_rel: Tolerance = 0.005
    exec_sql_mode: ExecSqlMode = "set"
    format: FormatSpec | None = None
    also_numeric: bool = False
    """For ``format`` tasks: also check the number against ``truth_sql``."""
    variants: list[Variant] = Field(default_factory=list)
    """Careless readings besides the policy-ignored ones that validation derives (another
    year, another average): each must fall outside the tolerance."""
    tolerance_exempt: dict[ItemId, NonBlank] = Field(default_factory=dict)
    """Variant id -> why the task accepts that variant's answer (say, a rule that cannot
    change it); validation refuses an exemption for a variant that is not inside."""

    @model_validator(mode="after")
    def _check_kind_fields(self) -> Grading:
        if (self.variants or self.tolerance_exempt) and not (
            self.kind == "numeric" or self.also_numeric
        ):
            raise ValueError("grading.variants and tolerance_exempt need a numeric truth")
        ids = [v.id for v in self.variants]
        if len(ids) != len(set(ids)):
            raise ValueError(f"grading.variants: an id is used twice ({', '.join(ids)})")
        if self.kind in ("numeric", "exec_sql") and not self.truth_sql:
            raise ValueError(f"grading.kind {self.kind!r} needs grading.truth_sql")
        if self.kind == "entity" and not self.entities:
            raise ValueError("grading.kind 'entity' needs grading.entities (catalog ids)")
        if self.kind == "format" and self.format is None:
            raise ValueError("grading.kind 'format' needs grading.format")
        if self.tolerance_rel > 1 and not self.tolerance_abs:
            raise ValueError(
                f"grading.tolerance_rel {self.tolerance_rel} is above 1 (more than 100 % off "
                "would pass); use at most 1, or tolerance_abs for an absolute margin"
            )
        return self


class Task(_AuthoredSpec):
    """One question (or a multi-turn conversation) with how to grade it."""

    id: ItemId
    suite: Suite
    category: Category
    difficulty: Difficulty
    prompt: NonBlank | None = None
    turns: list[NonBlank] = Field(default_factory=list)
    """Multi-turn: the user's messages in order; the last turn's answer is graded."""
    arms: list[NonBlank] = Field(default_factory=list)
    """Arm names this task applies to; empty means every arm."""
    trap_classes: list[NonBlank] = Field(default_factory=list)
    budget: int = Field(default=30, ge=1, le=200)
    """Tool-call budget for one episode."""
    expected_tools: list[NonBlank] = Field(default_factory=list)
    """Tools of which at least one should be used (tool-overlap score)."""
    fast_path: list[NonBlank] = Field(default_factory=list)
    """Pre-aggregated dataset ids whose use counts as finding the fast path."""
    rubric: list[NonBlank] = Field(default_factory=list)
    """Rubric item ids the judge checks (e.g. ``caveat.cents``)."""
    grading: Grading
    tags: list[NonBlank] = Field(default_factory=list)
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


class ProtocolStep(_AuthoredSpec):
    """One step of a lifecycle protocol."""

    kind: ProtocolStepKind
    name: ItemId
    """Step name used in metrics: teach, recall, promote, transfer, supersede, abstain."""
    identity: NonBlank = "teacher"
    """Which identity acts: ``teacher``, ``learner`` or ``reviewer``."""
    prompt: NonBlank | None = None
    grading: Grading | None = None
    action: dict[str, object] = Field(default_factory=dict)
    """For ``review``: the scripted apply_knowledge call (sink, target)."""
    expect: dict[str, object] = Field(default_factory=dict)
    """For ``verify``: the state the admin API must show."""
    fact: NonBlank | None = None
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


class Protocol(_AuthoredSpec):
    """A multi-episode lifecycle script with two identities: S5, or an S6 expert protocol
    whose graded steps need the taught fact and real analysis."""

    id: ItemId
    suite: Literal["s5", "s6"] = "s5"
    category: Category = "lifecycle"
    difficulty: Difficulty = "hard"
    fact: NonBlank
    """The fact taught, in words."""
    related_ids: list[NonBlank] = Field(default_factory=list)
    """Dataset or column ids the fact is about (passed to memory_capture)."""
    steps: list[ProtocolStep] = Field(min_length=1)
    """At least one step; step names are unique (truths are keyed ``<protocol>/<step>``)."""
    arms: list[NonBlank] = Field(default_factory=list)
    tags: list[NonBlank] = Field(default_factory=list)
    smoke: bool = False

    @model_validator(mode="after")
    def _check_step_names(self) -> Protocol:
        seen: set[str] = set()
        for step in self.steps:
            if step.name in seen:
                raise ValueError(f"step name {step.name!r} is used twice")
            if len(self.id) + 1 + len(step.name) > 100:
                raise ValueError(
                    f"'{self.id}.{step.name}' (the id of step {step.name!r}'s episode) is longer "
                    "than 100 characters"
                )
            seen.add(step.name)
        return self


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
    data_fingerprint: DataFingerprint | None = None
    """An external world's data when the lock was computed (per-table rows and content
    hashes): a changed warehouse is reported table by table. Absent for built-in worlds."""
