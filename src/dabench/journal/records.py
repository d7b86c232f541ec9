"""Records written to a run directory: the manifest, episodes, and their grades.

A run directory holds::

    manifest.json     a :class:`RunManifest`
    episodes.jsonl    one :class:`Episode` per line, appended and flushed as each finishes
    grades.jsonl      one :class:`Grade` per line (written by ``dabench grade``/``run``)
    stats.json        statistics (see ``dabench.stats``)
    report.md / report.html

An episode is one attempt of one task (or one protocol) by one arm; its key
``<arm>/<task_id>/<attempt>`` is unique in a journal.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dabench.roles import Role

EpisodeStatus = Literal["completed", "no_answer", "budget_exhausted", "timeout", "harness_error"]
"""How an episode ended. ``timeout`` is the agent's episode time limit (a model failure);
``harness_error`` is ours or the infrastructure's (provider outage, target died) and is never
graded as a model failure."""


TtftSource = Literal["measured", "reported"]
"""Where a time to first token comes from: measured by dabench or reported by the target."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


def episode_key(arm: str, task_id: str, attempt: int) -> str:
    """The unique key of an episode in a journal."""
    return f"{arm}/{task_id}/{attempt}"


class TokenUsage(_Record):
    """Tokens an episode consumed, as the provider reported them."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        """All tokens counted once."""
        return self.input + self.output + self.cache_read + self.cache_write


class ToolCall(_Record):
    """One tool call the agent made and what came back."""

    index: int
    """Position in the episode, from 0."""
    turn: int = 0
    """Index of the user turn during which it was made."""
    session: str = ""
    """Session handle the call carried (set by the harness, never by the model)."""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str = ""
    """The tool's output as text (what the model saw)."""
    is_error: bool = False
    error_code: str | None = None
    """Structured error code (``SEARCH_REQUIRED``, ``SQL_REFUSED``...) when the tool gave one."""
    latency_ms: float = 0.0
    started_at: datetime | None = None
    roles: list[Role] | None = None
    """The roles the tool plays on the arm's target (``sql``, ``search``...; empty: none),
    from the target's role map; ``None`` in journals written before roles were recorded."""


class Message(_Record):
    """One message of the transcript in a provider-neutral form."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    tool_call_id: str | None = None


class AuditCheck(_Record):
    """The target's audit rows for the episode's sessions, checked against our own count."""

    source: Literal["platform", "harness"]
    """``platform``: read back from the target's audit API; ``harness``: the target has no
    audit store, so efficiency comes from our own trace."""
    expected_calls: int
    audit_rows: int
    ok: bool
    detail: str = ""
    enrichment_tokens_full: int = 0
    enrichment_tokens_delivered: int = 0
    rows: list[dict[str, Any]] = Field(default_factory=list)
    """The audit rows themselves (as the target returned them)."""


class StepRecord(_Record):
    """One step of a lifecycle protocol episode (S5)."""

    name: str
    kind: str
    identity: str
    answer: str | None = None
    passed: bool | None = None
    detail: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    state: dict[str, Any] = Field(default_factory=dict)
    """What the admin API showed after the step."""


class TargetRound(_Record):
    """One round of a target that runs its own agent loop (Elastic Agent Builder): what the
    target reported about it besides the tool calls and the answer."""

    turn: int
    """Index of the user turn the round answered."""
    conversation_id: str | None = None
    round_id: str | None = None
    status: str | None = None
    reasoning: list[str] = Field(default_factory=list)
    """The round's reasoning steps, in order."""
    model_usage: dict[str, Any] | None = None
    """The target's usage record as reported (``None`` when the target version lacks it)."""
    ttft_ms: float | None = None
    """Time to first token as measured by the harness (streaming), else as reported."""
    ttft_source: TtftSource | None = None
    """Where ``ttft_ms`` comes from: ``measured`` by dabench or ``reported`` by the target."""
    ttlt_ms: float | None = None
    """Time to last token as reported by the target."""
    reported_ttft_ms: float | None = None
    """Time to first token as reported by the target."""
    wall_ms: float = 0.0
    """Wall time of the request as measured by the harness."""
    retries: int = 0
    """Transient failures (429, 503, unsent requests) retried to complete this round."""


class Episode(_Record):
    """One attempt of one task by one arm."""

    key: str
    """``<arm>/<task_id>/<attempt>``."""
    run_id: str
    arm: str
    task_id: str
    attempt: int
    suite: str
    category: str
    difficulty: str
    status: EpisodeStatus
    harness_error: str | None = None
    """The cause, when ``status == "harness_error"``."""
    agent: str
    """Agent kind: ``llm``, ``oracle``, ``replay``, ``kibana``."""
    provider: str | None = None
    model: str | None = None
    target: str
    """Target kind and profile, e.g. ``reference:a2``."""
    prompts: list[str]
    """The user's messages in order."""
    answers: list[str] = Field(default_factory=list)
    """The agent's answer to each user message."""
    final_answer: str | None = None
    messages: list[Message] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    steps: list[StepRecord] = Field(default_factory=list)
    """Protocol steps (S5 only)."""
    usage: TokenUsage = Field(default_factory=TokenUsage)
    usage_known: bool = True
    """False when a model call or target round did not report its usage: ``usage`` is then a
    lower bound and statistics treat the episode's tokens as unknown, never as 0."""
    cost_usd: float | None = None
    cost_source: Literal["provider", "price_table", "none"] = "none"
    wall_ms: float = 0.0
    ttft_ms: float | None = None
    """Time to first token, where the target streams."""
    ttft_source: TtftSource | None = None
    """``measured`` by dabench (first streamed chunk) or ``reported`` by the target."""
    transient_retries: int = 0
    """Transient provider or target failures (429, 5xx, timeouts) retried during the episode;
    they cost time, not correctness."""
    sessions: list[str] = Field(default_factory=list)
    audit: AuditCheck | None = None
    rounds: list[TargetRound] = Field(default_factory=list)
    """Target-side rounds (targets that run their own agent loop, e.g. ``kibana``)."""
    node: str | None = None
    """The cluster node that played the episode (``IP/first 6 of its id``), on a Ray run."""
    started_at: datetime
    finished_at: datetime


class GradeCheck(_Record):
    """One deterministic check inside a grade, with its reason in words."""

    name: str
    passed: bool
    reason: str
    expected: Any = None
    found: Any = None
    uncertain: bool = False
    """The rules could not settle this check (docs/grading.md, "Uncertain grades"): more than
    one candidate, no answer marker where one is needed, a currency or unit they cannot
    read. ``passed`` is then False; the judge settles it when one is configured."""


class Grade(_Record):
    """The grade of one episode."""

    key: str
    passed: bool
    """The headline verdict used for accuracy and pass^k."""
    score: float
    """0..1 (1 for passed deterministic grades); the judge's weighted overall where judged."""
    kind: str
    reason: str
    checks: list[GradeCheck] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict)
    """Per-episode scores 0..1 (correctness, groundedness, relevance, tool, latency, cost,
    error_rate, format, instruction_following, overall...) as defined in docs/grading.md."""
    judge: dict[str, Any] | None = None
    """The judge's verdict (claims, rubric items, reasoning) where a judge was used."""
    rubric_version: str | None = None
    excluded: bool = False
    """True for harness errors: excluded from accuracy, reported separately."""
    uncertain: bool = False
    """The deterministic rules could not settle the headline check (a check with
    ``uncertain``). Without a judge ``passed`` is False; with one, the judge decides."""
    settled_by: str | None = None
    """``"judge"`` when the judge's verdict decided ``passed`` of an uncertain grade."""


class RunManifest(_Record):
    """``manifest.json``: everything needed to reproduce and to trust a run."""

    run_id: str
    dabench_version: str
    git_commit: str | None
    python_version: str
    experiment: dict[str, Any]
    """The experiment as resolved (arms, k, selection, settings)."""
    experiment_hash: str
    world_seed: int
    world_scale: int
    world_hash: str
    world_source: str | None = None
    """An external world (docs/own-data.md): engine, tables and data fingerprint; the seed
    and scale then do not apply."""
    world_seed_random: bool = False
    """The seed was drawn at random (``dabench run --world-seed random``); ``--world-seed
    <world_seed>`` rebuilds the same world."""
    task_set_hash: str
    task_ids: list[str]
    k: int
    arms: list[dict[str, Any]]
    """Per arm: name, target (kind, profile, profile hash), agent (kind, provider, model,
    settings), efficiency source (``platform`` audit or ``harness`` trace)."""
    judge: dict[str, Any] | None = None
    """Judge model and rubric version."""
    no_model: bool = False
    """True when no LLM was used (oracle, probe or replay agents only)."""
    caveats: list[str] = Field(default_factory=list)
    """What every report of the run must say (e.g. agent programs that ran unsealed)."""
    started_at: datetime
    finished_at: datetime | None = None
