"""Trends across published runs: accuracy and pass^k per arm, model and suite over time."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from dabench.store.records import ArmStatRecord

BARS = "▁▂▃▄▅▆▇█"
"""Sparkline glyphs, lowest to highest."""


@dataclass(frozen=True)
class TrendPoint:
    """One run's figures for one series."""

    run_id: str
    started_at: datetime
    accuracy: float | None
    accuracy_low: float | None
    accuracy_high: float | None
    pass_hat_k: float | None
    k: int
    n_episodes: int
    n_excluded: int


@dataclass
class TrendSeries:
    """One (arm, agent kind, model, target with version, suite) across runs, oldest first:
    a change of agent, model or target version is another series, never a regression."""

    arm: str
    model: str
    suite: str
    agent: str = "—"
    target: str = "—"
    points: list[TrendPoint] = field(default_factory=list)

    @property
    def latest(self) -> TrendPoint:
        """The newest run's point."""
        return self.points[-1]

    def change(self) -> float | None:
        """Accuracy of the newest run minus the first (``None`` when either is unknown)."""
        first, last = self.points[0].accuracy, self.points[-1].accuracy
        return None if first is None or last is None else last - first


def sparkline(values: Iterable[float | None], lo: float = 0.0, hi: float = 1.0) -> str:
    """One glyph per value on a fixed ``lo``..``hi`` scale (rates: 0..1, so that the same
    height means the same rate in every series); ``·`` for an unknown value."""
    out = []
    span = hi - lo or 1.0
    for v in values:
        if v is None:
            out.append("·")
            continue
        frac = min(max((v - lo) / span, 0.0), 1.0)
        out.append(BARS[round(frac * (len(BARS) - 1))])
    return "".join(out)


def trends(stats: Iterable[ArmStatRecord]) -> list[TrendSeries]:
    """Series per (arm, agent kind, model, target and its version, suite): the ``overall``
    rows as suite ``all`` and each suite's rows, each series oldest run first; series
    ordered by arm, model, suite, agent, target."""
    by_key: dict[tuple[str, str, str, str, str], TrendSeries] = {}
    seen: dict[tuple[str, str, str, str, str], set[str]] = defaultdict(set)
    for s in sorted(stats, key=lambda r: (r.started_at, r.run_id)):
        if s.dimension == "overall":
            suite = "all"
        elif s.dimension == "suite":
            suite = s.value
        else:
            continue
        key = (s.arm, s.model or "—", suite, s.agent or "—", s.target or "—")
        if s.run_id in seen[key]:
            continue
        seen[key].add(s.run_id)
        series = by_key.setdefault(key, TrendSeries(*key))
        series.points.append(
            TrendPoint(
                run_id=s.run_id,
                started_at=s.started_at,
                accuracy=s.accuracy,
                accuracy_low=s.accuracy_low,
                accuracy_high=s.accuracy_high,
                pass_hat_k=s.pass_hat_k,
                k=s.k,
                n_episodes=s.n_episodes,
                n_excluded=s.n_excluded,
            )
        )
    order = sorted(by_key, key=lambda k: (k[0], k[1], k[2] != "all", k[2], k[3], k[4]))
    return [by_key[k] for k in order]
