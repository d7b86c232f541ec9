"""The view model both reports render: statistics indexed for templates, per-task rows."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from dabench.stats.frame import EpisodeFrame
from dabench.stats.model import ArmSummary, Delta, Dimension, GroupStats, RunStats
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
    """A row of the ranking table."""

    rank: int
    summary: ArmSummary
    overall: GroupStats


@dataclass
class ReportContext:
    """Everything a report template needs."""

    run: RunData
    stats: RunStats
    frame: EpisodeFrame
    ranking: list[RankedArm]
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
    suite_rank = {s: i for i, s in enumerate(("s1", "s2", "s3", "s4", "s5"))}
    rows.sort(key=lambda r: (suite_rank.get(r.suite, 9), r.id))
    return rows


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
    ranked = [
        (s, groups[(s.arm, "overall", "all")])
        for s in stats.summaries
        if (s.arm, "overall", "all") in groups
    ]
    ranked.sort(
        key=lambda p: (
            -(p[0].adjusted_overall if p[0].adjusted_overall is not None else -1.0),
            p[0].arm,
        )
    )
    return ReportContext(
        run=run,
        stats=stats,
        frame=frame,
        ranking=[RankedArm(i + 1, s, g) for i, (s, g) in enumerate(ranked)],
        values=values,
        tasks=_task_rows(run, frame),
        _groups=groups,
        _deltas=deltas,
    )
