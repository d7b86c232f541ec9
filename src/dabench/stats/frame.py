"""A columnar view of a run: one numpy array per per-episode quantity.

Built once from :class:`~dabench.stats.rundir.RunData`; every statistic is then a masked,
vectorised reduction over these arrays, which keeps 100,000 episodes fast.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, MutableSequence, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from dabench.errors import DabenchError
from dabench.grading.tool_equivalents import (
    manifest_offered_tools,
    manifest_roles,
    met_expected_tools,
    offered_expected_tools,
)
from dabench.journal.records import Episode, Grade, RunManifest
from dabench.journal.store import EPISODES_FILE, RecordScan
from dabench.stats.rundir import (
    EpisodeLines,
    RunData,
    TaskInfo,
    grade_lines,
    manifest_arm_names,
    read_run_manifest,
    run_data,
    torn_note,
)
from dabench.stats.taxonomy import classify_failure, episode_calls, tool_trace

Bools = npt.NDArray[np.bool_]
Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Strs = npt.NDArray[np.str_]

TIMEOUT_KEYS = ("episode_timeout_s", "timeout_s", "episode_time_limit_s")
"""Setting names searched (arm first, then experiment) for the episode time limit."""


def _find_number(obj: Any, keys: tuple[str, ...]) -> float | None:
    if isinstance(obj, dict):
        for key in keys:
            value = obj.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
        for value in obj.values():
            found = _find_number(value, keys)
            if found is not None:
                return found
    return None


def timeout_limits(manifest: RunManifest) -> dict[str, float]:
    """Per arm, the episode time limit in seconds when the manifest records one."""
    default = _find_number(manifest.experiment, TIMEOUT_KEYS)
    limits: dict[str, float] = {}
    for arm in manifest.arms:
        value = _find_number(arm, TIMEOUT_KEYS)
        if value is None:
            value = default
        if value is not None:
            limits[str(arm.get("name", ""))] = value
    return limits


class StepLike(Protocol):
    """A protocol step as statistics read it (a journal step or a :class:`StepBrief`)."""

    @property
    def name(self) -> str: ...
    @property
    def passed(self) -> bool | None: ...


class WithSteps(Protocol):
    """An episode as lifecycle statistics read it (a journal episode or a brief)."""

    @property
    def task_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def steps(self) -> Sequence[StepLike]: ...


@dataclass(frozen=True, slots=True)
class StepBrief:
    """What statistics read of one protocol step: its name and verdict."""

    name: str
    passed: bool | None


@dataclass(frozen=True, slots=True)
class EpisodeBrief:
    """What statistics and reports read of one episode once the frame is built (its
    transcript, prompts and answer are read back from the journal only for the HTML panel)."""

    key: str
    arm: str
    task_id: str
    attempt: int
    suite: str
    category: str
    difficulty: str
    status: str
    harness_error: str | None
    agent: str
    provider: str | None
    model: str | None
    target: str
    steps: tuple[StepBrief, ...]
    transient_retries: int
    audit_ok: bool | None
    """``None`` when the episode has no audit record."""
    audit_source: str | None


UNCERTAIN_NONE, UNCERTAIN_OPEN, UNCERTAIN_JUDGE_PASSED, UNCERTAIN_JUDGE_FAILED = range(4)
"""Values of :attr:`EpisodeFrame.uncertain`: a certain (or excluded, or missing) grade, an
uncertain grade no judge settled, one the judge settled as passed, as failed."""


@dataclass
class EpisodeFrame:
    """Per-episode arrays of one run (index i is the i-th episode of the journal)."""

    episodes: list[EpisodeBrief]
    arms: list[str]
    task_ids: list[str]
    arm: Ints
    task: Ints
    suite: Strs
    category: Strs
    difficulty: Strs
    status: Strs
    failure: Strs
    graded: Bools
    """Graded and not excluded: counts in accuracy."""
    harness: Bools
    """Harness errors (excluded from accuracy)."""
    passed: Bools
    score: Floats
    """Per-episode overall score (``scores['overall']``, else the grade's score)."""
    calls: Ints
    errors: Ints
    retries: Ints
    tool_expected: Bools
    tool_mismatch: Bools
    fast_path_task: Bools
    fast_path_used: Bools
    wall_s: Floats
    wall_capped_s: Floats
    """Wall clock with timeouts counted at the episode time limit (when known)."""
    tokens: Floats
    """Tokens of the episode; NaN where its usage is unknown (a round did not report it)."""
    enrichment: Ints
    cost: Floats
    """NaN where the episode has no cost."""
    completed: Bools
    ttft_ms: Floats
    """Time to first token in ms; NaN where the episode has none (the target does not stream)."""
    ttft_measured: Bools
    """True where the time to first token was measured by dabench (not reported by the target)."""
    uncertain: Ints
    """``UNCERTAIN_*``: whether the grade was uncertain and how a judge settled it."""
    scores: dict[str, Floats] = field(default_factory=dict)
    traps: dict[str, Bools] = field(default_factory=dict)
    min_calls: Floats = field(default_factory=lambda: np.zeros(0))
    """Per task code: the fewest tool calls of any passed episode (NaN if none passed)."""
    judged: int = 0
    """Episodes whose grade carries judged scores."""
    judge_rubric: str | None = None
    """The rubric version of the first judged grade that names one."""

    def __len__(self) -> int:
        return len(self.episodes)


COLUMN_DTYPES: dict[str, Any] = {
    "arm": np.int64,
    "task": np.int64,
    "suite": str,
    "category": str,
    "difficulty": str,
    "status": str,
    "failure": str,
    "graded": bool,
    "harness": bool,
    "passed": bool,
    "score": np.float64,
    "calls": np.int64,
    "errors": np.int64,
    "retries": np.int64,
    "tool_expected": bool,
    "tool_mismatch": bool,
    "fast_path_task": bool,
    "fast_path_used": bool,
    "wall_s": np.float64,
    "wall_capped_s": np.float64,
    "tokens": np.float64,
    "enrichment": np.int64,
    "cost": np.float64,
    "completed": bool,
    "ttft_ms": np.float64,
    "ttft_measured": bool,
    "uncertain": np.int64,
}
"""The per-episode columns of an :class:`EpisodeFrame` and their NumPy dtypes."""


def _brief(ep: Episode, same: dict[str, str]) -> EpisodeBrief:
    """The brief of an episode; ``same`` holds one copy of each repeated text (arm, task,
    suite... are the same few strings across 100,000 episodes)."""

    one = same.setdefault
    audit = ep.audit
    return EpisodeBrief(
        key=ep.key,
        arm=one(ep.arm, ep.arm),
        task_id=one(ep.task_id, ep.task_id),
        attempt=ep.attempt,
        suite=one(ep.suite, ep.suite),
        category=one(ep.category, ep.category),
        difficulty=one(ep.difficulty, ep.difficulty),
        status=one(ep.status, ep.status),
        harness_error=ep.harness_error,
        agent=one(ep.agent, ep.agent),
        provider=None if ep.provider is None else one(ep.provider, ep.provider),
        model=None if ep.model is None else one(ep.model, ep.model),
        target=one(ep.target, ep.target),
        steps=tuple(StepBrief(one(st.name, st.name), st.passed) for st in ep.steps),
        transient_retries=ep.transient_retries,
        audit_ok=None if audit is None else audit.ok,
        audit_source=None if audit is None else one(audit.source, audit.source),
    )


def _buffer(dtype: Any) -> MutableSequence[Any]:
    """A growing column: a typed array for numbers (8 bytes a value, not a Python object)."""
    if dtype is np.float64:
        return array("d")
    if dtype is np.int64:
        return array("q")
    return []


def is_harness_fault(ep: Episode, grade: Grade | None) -> bool:
    """The episode is a harness error or its grade excluded it (never the agent's outcome)."""
    return ep.status == "harness_error" or bool(grade and grade.excluded)


def counts_as_passed(ep: Episode, grade: Grade | None) -> bool:
    """The episode's row is a pass: graded as passed and not a harness fault."""
    return grade is not None and grade.passed and not is_harness_fault(ep, grade)


def overall_score(grade: Grade) -> float:
    """An episode's score: its overall mix where the grade has one, else the grade's score."""
    return float(grade.scores.get("overall", grade.score))


def _uncertain(grade: Grade | None) -> int:
    if grade is None or grade.excluded or not grade.uncertain:
        return UNCERTAIN_NONE
    if grade.settled_by == "judge":
        return UNCERTAIN_JUDGE_PASSED if grade.passed else UNCERTAIN_JUDGE_FAILED
    return UNCERTAIN_OPEN


class FrameBuilder:
    """Builds an :class:`EpisodeFrame` one journal record at a time (nothing but the row is
    kept of a record), then keeps the rows :meth:`finish` selects."""

    def __init__(self, manifest: RunManifest, tasks: dict[str, TaskInfo] | None) -> None:
        self.arms = manifest_arm_names(manifest)
        self._arm_index = {a: i for i, a in enumerate(self.arms)}
        self._tasks = tasks or {}
        self._limits = timeout_limits(manifest)
        self._offered = manifest_offered_tools(manifest)
        self._roles = manifest_roles(manifest)
        self._briefs: list[EpisodeBrief] = []
        self._same: dict[str, str] = {}
        self._cols: dict[str, MutableSequence[Any]] = {
            name: _buffer(dtype) if name != "task" else [] for name, dtype in COLUMN_DTYPES.items()
        }
        self._scores: dict[str, tuple[array[int], array[float]]] = {}
        """Per score name: the rows that have it and its values."""
        self._traps: dict[str, array[int]] = {}
        """Per trap class: the rows of its tasks."""
        self._judged = array("q")
        """Rows whose grade carries judged scores ..."""
        self._rubrics: list[str | None] = []
        """... and each one's rubric version."""
        self._expected: dict[tuple[str, str], list[str]] = {}
        """Per (arm, task): the task's expected tools that the arm offers."""

    def add(self, ep: Episode, grade: Grade | None) -> None:
        """Append the row of one episode (and its grade, if any)."""
        i = len(self._briefs)
        cols = self._cols
        info = self._tasks.get(ep.task_id) or TaskInfo(id=ep.task_id)
        harness = is_harness_fault(ep, grade)
        passed: bool | None = None if grade is None else grade.passed
        calls = episode_calls(ep)
        trace = tool_trace(calls, info.fast_path)
        wall = ep.wall_ms / 1000.0
        limit = self._limits.get(ep.arm)
        brief = _brief(ep, self._same)
        self._briefs.append(brief)
        if ep.arm not in self._arm_index:
            self._arm_index[ep.arm] = len(self.arms)
            self.arms.append(ep.arm)
        cols["arm"].append(self._arm_index[ep.arm])
        cols["task"].append(brief.task_id)
        cols["suite"].append(brief.suite)
        cols["category"].append(brief.category)
        cols["difficulty"].append(brief.difficulty)
        cols["status"].append(brief.status)
        cols["failure"].append(classify_failure(ep, passed, harness, trace))
        cols["graded"].append(grade is not None and not harness)
        cols["harness"].append(harness)
        cols["passed"].append(counts_as_passed(ep, grade))
        score = 0.0
        if grade is not None:
            score = overall_score(grade)
            for name, value in grade.scores.items():
                got = self._scores.get(name)
                if got is None:
                    got = self._scores[name] = (array("q"), array("d"))
                got[0].append(i)
                got[1].append(value)
            if grade.judge:
                self._judged.append(i)
                self._rubrics.append(grade.rubric_version)
        cols["score"].append(score)
        cols["calls"].append(trace.calls)
        cols["errors"].append(trace.errors)
        cols["retries"].append(trace.retries)
        arm_roles = self._roles.get(ep.arm)
        expected = self._expected.get((ep.arm, ep.task_id))
        if expected is None:
            expected = self._expected[ep.arm, ep.task_id] = offered_expected_tools(
                info.expected_tools, self._offered.get(ep.arm), arm_roles
            )
        cols["tool_expected"].append(bool(expected))
        cols["tool_mismatch"].append(
            bool(expected) and not met_expected_tools(calls, expected, arm_roles)
        )
        cols["fast_path_task"].append(bool(info.fast_path))
        cols["fast_path_used"].append(trace.fast_path_used)
        cols["wall_s"].append(wall)
        capped = max(wall, limit) if ep.status == "timeout" and limit is not None else wall
        cols["wall_capped_s"].append(capped)
        cols["tokens"].append(ep.usage.total if ep.usage_known else np.nan)
        cols["enrichment"].append(ep.audit.enrichment_tokens_delivered if ep.audit else 0)
        cols["cost"].append(np.nan if ep.cost_usd is None else ep.cost_usd)
        cols["completed"].append(ep.status == "completed")
        cols["ttft_ms"].append(np.nan if ep.ttft_ms is None else ep.ttft_ms)
        cols["ttft_measured"].append(ep.ttft_source == "measured")
        cols["uncertain"].append(_uncertain(grade))
        for trap in info.trap_classes:
            self._traps.setdefault(trap, array("q")).append(i)

    def status_of(self, row: int) -> str:
        """The status of the episode added as row ``row``."""
        return str(self._cols["status"][row])

    def finish(self, rows: list[int] | None = None) -> EpisodeFrame:
        """The frame of the rows added, or of ``rows`` (indices in :meth:`add` order) only."""
        added = len(self._briefs)
        keep = list(range(added)) if rows is None else rows
        new_index = np.full(added, -1, dtype=np.int64)
        new_index[keep] = np.arange(len(keep))
        n = len(keep)
        cols = (
            self._cols if rows is None else {k: [v[i] for i in keep] for k, v in self._cols.items()}
        )
        task_index: dict[str, int] = {}
        cols["task"] = [task_index.setdefault(t, len(task_index)) for t in cols["task"]]
        columns = {
            name: np.asarray(cols[name], dtype=dtype) for name, dtype in COLUMN_DTYPES.items()
        }
        scores: dict[str, Floats] = {}
        for name, (where, values) in _first_kept(self._scores, new_index, lambda v: v[0]):
            at = new_index[np.asarray(where, dtype=np.int64)]
            col = np.full(n, np.nan)
            col[at[at >= 0]] = np.asarray(values, dtype=np.float64)[at >= 0]
            scores[name] = col
        traps: dict[str, Bools] = {}
        for trap, where in _first_kept(self._traps, new_index, lambda v: v):
            at = new_index[np.asarray(where, dtype=np.int64)]
            flags = np.zeros(n, dtype=bool)
            flags[at[at >= 0]] = True
            traps[trap] = flags
        judged_at = new_index[np.asarray(self._judged, dtype=np.int64)]
        judged = sorted(
            (int(at), rubric)
            for at, rubric in zip(judged_at, self._rubrics, strict=True)
            if at >= 0
        )
        frame = EpisodeFrame(
            episodes=[self._briefs[i] for i in keep],
            arms=self.arms,
            task_ids=list(task_index),
            **columns,
            scores=scores,
            traps=traps,
            judged=len(judged),
            judge_rubric=next((r for _, r in judged if r), None),
        )
        frame.min_calls = _min_passed_calls(frame)
        return frame


V = TypeVar("V")


def _first_kept(
    by_name: dict[str, V], new_index: Ints, rows_of: Callable[[V], array[int]]
) -> list[tuple[str, V]]:
    """The names that some kept row has, ordered by their first kept row (the order a frame
    of the kept rows alone would list them in)."""
    firsts: list[tuple[int, int, str, V]] = []
    for order, (name, value) in enumerate(by_name.items()):
        at = new_index[np.asarray(rows_of(value), dtype=np.int64)]
        if (at >= 0).any():
            firsts.append((int(at[at >= 0].min()), order, name, value))
    firsts.sort(key=lambda f: (f[0], f[1]))
    return [(name, value) for _, _, name, value in firsts]


def build_frame(run: RunData) -> EpisodeFrame:
    """Flatten a loaded run into an :class:`EpisodeFrame`."""
    builder = FrameBuilder(run.manifest, run.tasks)
    for ep in run.episodes:
        builder.add(ep, run.grades.get(ep.key))
    return builder.finish()


class RecordObserver(Protocol):
    """Called by :func:`stream_run` with every journal record and its grade."""

    def __call__(self, run: RunData, offset: int, ep: Episode, grade: Grade | None) -> None:
        """``offset``: the record's byte offset in the journal."""


def stream_run(
    run_dir: Path | str, observe: RecordObserver | None = None
) -> tuple[RunData, EpisodeFrame]:
    """Read a run directory one journal line at a time into its frame, holding no episode
    or grade: the returned run reads a record back from its file when asked
    (:class:`~dabench.stats.rundir.EpisodeLines`, :class:`~dabench.stats.rundir.GradeLines`).
    The same run as :func:`~dabench.stats.rundir.load_run`; close it with ``run.close()``.
    ``observe`` sees every record once, as parsed (e.g. to keep what a report shows of it)."""
    run_dir = Path(run_dir)
    manifest = read_run_manifest(run_dir)
    grades = grade_lines(run_dir)
    run = run_data(run_dir, manifest, [], grades, None)  # the task snapshot, before the scan
    builder = FrameBuilder(manifest, run.tasks)
    scan = RecordScan(run_dir / EPISODES_FILE, Episode)
    offsets: list[int] = []
    first: dict[str, int] = {}
    """Key -> the row of its first record: a retried harness error's row is replaced."""
    rows: list[int] = []
    for offset, ep in scan:
        row = first.get(ep.key)
        if row is not None:
            if builder.status_of(rows[row]) != "harness_error":
                raise DabenchError(f"{scan.path}: episode {ep.key!r} appears more than once")
            rows[row] = len(offsets)
        else:
            first[ep.key] = len(rows)
            rows.append(len(offsets))
        offsets.append(offset)
        grade = grades.get(ep.key)
        builder.add(ep, grade)
        if observe is not None:
            observe(run, offset, ep, grade)
    frame = builder.finish(None if len(rows) == len(offsets) else rows)
    run.episodes = EpisodeLines(scan.path, [offsets[i] for i in rows])
    if scan.torn is not None:
        run.notes.insert(0, torn_note(scan.torn, run_dir))
    return run, frame


def _min_passed_calls(frame: EpisodeFrame) -> Floats:
    out = np.full(len(frame.task_ids), np.inf)
    ok = frame.passed & frame.graded
    np.minimum.at(out, frame.task[ok], frame.calls[ok].astype(np.float64))
    out[np.isinf(out)] = np.nan
    return out
