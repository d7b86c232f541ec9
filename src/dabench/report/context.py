"""The view model both reports render: statistics indexed for templates, per-task rows."""

from __future__ import annotations

import functools
import hashlib
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from dabench.grading.tool_equivalents import manifest_roles
from dabench.journal.sequential import SequentialRecord, read_sequential
from dabench.report.fmt import num, pct, ttft
from dabench.roles import ToolRoles
from dabench.stats.compute import SUITE_ORDER
from dabench.stats.frame import (
    UNCERTAIN_JUDGE_FAILED,
    UNCERTAIN_JUDGE_PASSED,
    UNCERTAIN_NONE,
    EpisodeFrame,
)
from dabench.stats.model import ArmSummary, Delta, Dimension, GroupStats, RunStats, headline_ok
from dabench.stats.rundir import RunData, TaskInfo

DIMENSIONS: tuple[Dimension, ...] = ("suite", "category", "difficulty", "trap_class")

TTFT_CAPTION = (
    "TTFT: time to first token, p50 / p95 in ms over completed episodes that recorded one "
    '(n episodes), labelled by source. "Measured by dabench": a streamed (SSE) Kibana round, '
    "from the request to the first message chunk, which includes Kibana's stream flush "
    'throttle (about 100 ms). "Reported by Kibana": Kibana\'s own time_to_first_token of a '
    "synchronous round. The two are different figures: compare arms only when their source "
    "is the same. LLM-provider arms do not stream, so they have none (—)."
)
"""The caption both reports print under their time-to-first-token figures."""


@dataclass
class TaskCell:
    """One arm's attempts of one task."""

    arm: str
    episodes: list[int]
    """Indices into the frame's episodes."""
    pills: list[tuple[str, str, int, str]] = field(default_factory=list)
    """Per episode: key, arm, attempt and state (``ok`` passed, ``ko`` failed, ``ex``
    excluded), precomputed so templates do no array indexing."""
    n: int = 0
    c: int = 0
    excluded: int = 0
    score: float | None = None


@dataclass
class TaskRow:
    """One task of the per-task table with a cell per arm."""

    id: str
    suite: str
    category: str
    difficulty: str
    info: TaskInfo
    cells: list[TaskCell] = field(default_factory=list)


@dataclass
class RankedArm:
    """A row of the ranking table: the arm's rank within its task-set group."""

    rank: int
    summary: ArmSummary
    overall: GroupStats
    group: int = 1
    """1-based index of the arm's task-set group (arms ranked against each other)."""


@dataclass
class TaskSetGroup:
    """Arms that ran the same task set: ranked only against each other."""

    index: int
    tasks: list[str]
    suites: list[str]
    arms: list[RankedArm]

    @property
    def label(self) -> str:
        """``task set 1: 10 tasks (s1, s3)``."""
        n = len(self.tasks)
        return f"task set {self.index}: {n} task{'' if n == 1 else 's'} ({', '.join(self.suites)})"


SCORE_LABELS: dict[str, tuple[str, str]] = {
    "accuracy": ("accuracy", "share of graded episodes whose answer is right"),
    "reliability": ("reliability", "share of attempts that agree with the task's majority"),
    "correctness": ("correctness", "answer right (1) or wrong (0), or the judge's correctness"),
    "groundedness": ("groundedness", "share of the answer's claims grounded in tool output"),
    "relevance": ("relevance", "the judge's relevance of the answer to the question"),
    "instruction_following": ("instruction following", "the judge's format/instruction score"),
    "format": ("format", "the answer follows the requested format"),
    "rubric": ("rubric", "share of the task's rubric items met"),
    "tool": (
        "expected-tool use",
        "a tool in the role of an expected tool (sql, search, describe, list, fetch), offered by "
        "the arm, was used (1) or not (0)",
    ),
    "latency": ("speed score", "1 at or under the latency target, falling to 0 at the limit"),
    "cost": ("cost score", "1 at or under the cost target, falling to 0 at the limit"),
    "error_rate": ("error-free tool calls", "share of tool calls that did not fail"),
    "exact_answer": ("exact answer", "the answer line is exactly the expected value"),
    "overall": ("overall score", "weighted mix of the per-episode scores above"),
}
"""Display name and meaning of each score (every one: higher is better)."""


def score_label(name: str) -> str:
    """The display name of a score (``error_rate`` -> ``error-free tool calls``)."""
    return SCORE_LABELS.get(name, (name.replace("_", " "), ""))[0]


def score_help(name: str) -> str:
    """What a score measures, for a tooltip."""
    return SCORE_LABELS.get(name, ("", ""))[1]


ARM_PALETTE = (
    "#4f46e5", "#0ea5e9", "#f59e0b", "#10b981", "#ef4444",
    "#8b5cf6", "#14b8a6", "#f97316", "#64748b", "#db2777",
)  # fmt: skip
"""The arm colours (distinct on white and for the common colour-vision deficiencies)."""


def arm_color(name: str) -> str:
    """The arm's colour, from its name alone (stable across reports): the shipped profile
    names a0..a3 take the first four colours, any other name the colour its SHA-256 picks."""
    if name in ("a0", "a1", "a2", "a3"):
        return ARM_PALETTE[int(name[1])]
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return ARM_PALETTE[int.from_bytes(digest[:4], "big") % len(ARM_PALETTE)]


@dataclass(frozen=True)
class UncertainCount:
    """Grades the deterministic rules left uncertain (docs/grading.md, "Uncertain grades"),
    for one arm, and how they were settled."""

    arm: str
    uncertain: int
    judge_passed: int
    judge_failed: int

    @property
    def unsettled(self) -> int:
        """Uncertain grades no judge settled: counted as not passed."""
        return self.uncertain - self.judge_passed - self.judge_failed


EFFICIENCY_ROWS: tuple[tuple[str, str], ...] = (
    ("tool calls median / p90", "tool calls per episode"),
    ("errors before success", "tool errors per passed episode"),
    ("wall clock median / p90", "episode wall clock"),
    ("latency OK / all", "mean wall clock of completed episodes / of all (timeouts at the limit)"),
    ("TTFT p50 / p95 (ms)", "time to first token (caption below)"),
    ("tokens / episode", "mean tokens per episode"),
    ("enrichment tokens / episode", "knowledge-layer tokens delivered per episode"),
    ("VES-style", "mean over tasks of passed × sqrt((min calls + 1) / (calls + 1))"),
    ("fast path", "share of fast-path tasks' episodes that used the pre-aggregated dataset"),
    ("tool exec rate", "share of tool calls that executed without error"),
    ("tokens / tool call", "tokens / tool calls"),
    ("retries", "transient retries in total"),
    ("quality / $", "mean overall score / mean cost per episode"),
    ("quality / s", "mean overall score / mean wall seconds"),
)
"""The rows of the HTML efficiency table: label and what it measures."""


@dataclass
class EfficiencyRow:
    """One figure of the efficiency table with its formatted value per arm."""

    label: str
    help: str
    cells: list[tuple[str, str]]
    """(arm, formatted value) in manifest order."""


@dataclass
class ReportContext:
    """Everything a report template needs."""

    run: RunData
    stats: RunStats
    frame: EpisodeFrame
    ranking: list[RankedArm]
    """Every arm, ranked within its task-set group (groups in order, arms by rank)."""
    groups: list[TaskSetGroup]
    values: dict[str, list[str]]
    """Breakdown values present, per dimension."""
    tasks: list[TaskRow]
    _groups: dict[tuple[str, str, str], GroupStats] = field(default_factory=dict)
    _deltas: dict[tuple[str, str, str], Delta] = field(default_factory=dict)

    @property
    def arms(self) -> list[str]:
        """Arm names in manifest order."""
        return self.stats.arms

    @property
    def sequential(self) -> SequentialRecord | None:
        """Where each arm of a ``--until-decided`` run stopped (``None`` for a fixed design)."""
        return read_sequential(self.run.run_dir)

    @functools.cached_property
    def roles(self) -> dict[str, ToolRoles]:
        """Each arm's tool role map, where the manifest records one."""
        return manifest_roles(self.run.manifest)

    @property
    def colors(self) -> dict[str, str]:
        """Each arm's colour (from its name)."""
        return {arm: arm_color(arm) for arm in self.arms}

    @property
    def score_names(self) -> list[str]:
        """Scores every arm card lists (each arm shows n/a for one it lacks): accuracy,
        reliability, then every per-episode score any arm has (not the overall mix)."""
        names = {n for s in self.stats.summaries for n in s.score_means if n != "overall"}
        return ["accuracy", "reliability", *sorted(names)]

    @property
    def suites(self) -> list[str]:
        """The suites this run has graded groups in (``s1``, ``s3`` ...)."""
        return self.values.get("suite", [])

    def suite_tag(self, suite: str) -> str:
        """`` (S5)`` after a section title when the run has tasks of that suite, else ``""``
        (a title never names a suite the run did not play)."""
        return f" ({suite.upper()})" if suite in self.suites else ""

    def efficiency_rows(self) -> list[EfficiencyRow]:
        """The HTML efficiency table, one row per figure and a cell per arm (arms as columns
        keep the table narrow: it scrolls only with many arms)."""
        cells: dict[str, list[str]] = {}
        for arm in self.arms:
            g = self.cell(arm, "overall")
            if g is None:
                continue
            e = g.efficiency
            figures = [
                f"{num(e.tool_calls_median)} / {num(e.tool_calls_p90)}",
                num(e.errors_before_success_mean, 2),
                f"{num(e.wall_s_median)}s / {num(e.wall_s_p90)}s",
                f"{num(e.latency_ok_s)}s / {num(e.latency_all_s)}s",
                *([ttft(e)] if self.has_ttft else []),
                num(e.tokens_mean, 0),
                num(e.enrichment_tokens_mean, 0),
                pct(e.ves),
                pct(e.fast_path_rate),
                pct(e.tool_exec_rate),
                num(e.tokens_per_tool_call, 0),
                str(e.retries_total),
                num(e.quality_per_dollar, 2),
                num(e.quality_per_second, 3),
            ]
            cells[arm] = figures
        labels = [x for x in EFFICIENCY_ROWS if self.has_ttft or not x[0].startswith("TTFT")]
        return [
            EfficiencyRow(label, help_, [(arm, cells[arm][i]) for arm in cells])
            for i, (label, help_) in enumerate(labels)
        ]

    @property
    def agent_kinds(self) -> list[str]:
        """The agent kinds of the run's arms, from the manifest."""
        kinds = [str(a.get("agent", {}).get("kind", "")) for a in self.run.manifest.arms]
        return sorted({k for k in kinds if k})

    def composite_parts(self, arm: str) -> str:
        """What the arm's composite (adjusted overall) score is made of, in words."""
        s = self.stats.summary(arm)
        if s is None:
            return ""
        parts = ", ".join(
            f"{score_label(n)} {pct(v)}" for n, v in sorted(s.score_means.items()) if n != "overall"
        )
        g = self.cell(arm, "overall")
        acc = pct(g.accuracy.estimate) if g else "n/a"
        return (
            f"composite, not accuracy (accuracy {acc}): difficulty-weighted mean of the "
            f"per-episode overall score, a weighted mix of {parts or 'no scores'}, "
            "times (1 - failure penalty)"
        )

    @functools.cached_property
    def uncertain(self) -> list[UncertainCount]:
        """Per arm with any, the uncertain grades and how the judge settled them."""
        counts: dict[str, list[int]] = {}
        for episode, state in zip(self.frame.episodes, self.frame.uncertain.tolist(), strict=True):
            if state == UNCERTAIN_NONE:
                continue
            row = counts.setdefault(episode.arm, [0, 0, 0])
            row[0] += 1
            if state == UNCERTAIN_JUDGE_PASSED:
                row[1] += 1
            elif state == UNCERTAIN_JUDGE_FAILED:
                row[2] += 1
        return [UncertainCount(arm, *counts[arm]) for arm in self.arms if arm in counts]

    @property
    def has_ttft(self) -> bool:
        """Whether any arm recorded a time to first token (the reports show TTFT only then)."""
        return any(g.efficiency.ttft_n for g in self._groups.values() if g.dimension == "overall")

    @property
    def ttft_sources_differ(self) -> bool:
        """Whether arms' TTFT figures come from different sources (measured vs reported):
        the reports then say that they must not be compared."""
        sources = {
            g.efficiency.ttft_source
            for g in self._groups.values()
            if g.dimension == "overall" and g.efficiency.ttft_n
        }
        return len(sources) > 1 or "mixed" in sources

    def cell(self, arm: str, dimension: str, value: str = "all") -> GroupStats | None:
        """Group statistics of one arm and breakdown value."""
        return self._groups.get((arm, dimension, value))

    def delta(self, arm: str, dimension: str, value: str = "all") -> Delta | None:
        """The paired delta of an arm against the baseline for one breakdown value."""
        return self._deltas.get((arm, dimension, value))


def _task_rows(run: RunData, frame: EpisodeFrame) -> list[TaskRow]:
    by_task: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for i, (t, a) in enumerate(zip(frame.task.tolist(), frame.arm.tolist(), strict=True)):
        by_task[t][a].append(i)
    tasks = run.tasks or {}
    passed, graded = frame.passed.tolist(), frame.graded.tolist()
    rows: list[TaskRow] = []
    for code, task_id in enumerate(frame.task_ids):
        first = frame.episodes[next(iter(by_task[code].values()))[0]]
        row = TaskRow(
            id=task_id,
            suite=first.suite,
            category=first.category,
            difficulty=first.difficulty,
            info=tasks.get(task_id) or TaskInfo(id=task_id),
        )
        for a, arm in enumerate(frame.arms):
            idx = by_task[code].get(a, [])
            ok = [i for i in idx if graded[i]]
            row.cells.append(
                TaskCell(
                    arm=arm,
                    episodes=idx,
                    pills=[
                        (
                            frame.episodes[i].key,
                            arm,
                            frame.episodes[i].attempt,
                            "ok" if passed[i] else ("ko" if graded[i] else "ex"),
                        )
                        for i in idx
                    ],
                    n=len(ok),
                    c=sum(passed[i] for i in ok),
                    excluded=len(idx) - len(ok),
                    score=float(np.mean(frame.score[ok])) if ok else None,
                )
            )
        rows.append(row)
    suite_rank = {s: i for i, s in enumerate(SUITE_ORDER)}
    rows.sort(key=lambda r: (suite_rank.get(r.suite, 9), r.id))
    return rows


def _task_set_groups(stats: RunStats, frame: EpisodeFrame) -> list[TaskSetGroup]:
    """Arms grouped by the set of tasks they were graded on, each group ranked by accuracy
    (then pass^k, then name; arms with too few graded episodes to headline last); groups
    ordered by size of task set, larger first."""
    graded = frame.graded
    by_arm: dict[str, tuple[str, ...]] = {}
    for code, arm in enumerate(frame.arms):
        ran = {frame.task_ids[t] for t in frame.task[(frame.arm == code) & graded].tolist()}
        by_arm[arm] = tuple(sorted(ran))
    suites = {ep.task_id: ep.suite for ep in frame.episodes}
    keyed: dict[tuple[str, ...], list[tuple[ArmSummary, GroupStats]]] = {}
    for s in stats.summaries:
        g = next((x for x in stats.groups if x.arm == s.arm and x.dimension == "overall"), None)
        if g is not None:
            keyed.setdefault(by_arm.get(s.arm, ()), []).append((s, g))

    def order(p: tuple[ArmSummary, GroupStats]) -> tuple[bool, float, float, str]:
        g = p[1]
        acc, phk = g.accuracy.estimate, g.pass_hat_k.estimate
        few = not headline_ok(g.n_episodes, g.n_episodes + g.n_excluded)  # ranked last
        return (
            few,
            -(acc if acc is not None else -1.0),
            -(phk if phk is not None else -1.0),
            p[0].arm,
        )

    out: list[TaskSetGroup] = []
    for i, (tasks, members) in enumerate(sorted(keyed.items(), key=lambda kv: -len(kv[0]))):
        members.sort(key=order)
        out.append(
            TaskSetGroup(
                index=i + 1,
                tasks=list(tasks),
                suites=sorted({suites[t] for t in tasks if t in suites}),
                arms=[RankedArm(r + 1, s, g, group=i + 1) for r, (s, g) in enumerate(members)],
            )
        )
    return out


def build_context(run: RunData, stats: RunStats, frame: EpisodeFrame) -> ReportContext:
    """Index statistics for the templates and build the per-task rows."""
    groups: dict[tuple[str, str, str], GroupStats] = {
        (g.arm, g.dimension, g.value): g for g in stats.groups
    }
    deltas: dict[tuple[str, str, str], Delta] = {
        (d.arm, d.dimension, d.value): d for d in stats.deltas
    }
    values: dict[str, list[str]] = {dim: [] for dim in DIMENSIONS}
    for g in stats.groups:
        if g.dimension in values and g.value not in values[g.dimension]:
            values[g.dimension].append(g.value)
    task_groups = _task_set_groups(stats, frame)
    return ReportContext(
        run=run,
        stats=stats,
        frame=frame,
        ranking=[r for grp in task_groups for r in grp.arms],
        groups=task_groups,
        values=values,
        tasks=_task_rows(run, frame),
        _groups=groups,
        _deltas=deltas,
    )
