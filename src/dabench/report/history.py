"""``dabench history``: the runs under a directory with their headline numbers, one series
per (arm, agent kind, model, target version); an arm with less than
:data:`~dabench.stats.model.MIN_GRADED_SHARE` of its episodes graded shows no accuracy."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from dabench.errors import DabenchError, UserInputError
from dabench.journal.store import MANIFEST_FILE
from dabench.stats import RunStats, compute_stats, load_run, read_stats
from dabench.stats.model import headline_ok
from dabench.store.collect import arm_identity


class HistoryRow(BaseModel):
    """One arm of one run."""

    model_config = ConfigDict(extra="forbid")

    run_dir: str
    run_id: str
    started_at: str
    k: int
    tasks: int
    arm: str
    agent: str | None = None
    model: str | None = None
    target: str | None = None
    """The target's label, ``@version`` when known (a series is arm, agent, model, target)."""
    episodes: int
    graded: int = 0
    accuracy: float | None
    pass_hat_k: float | None
    score: float | None
    tool_calls_median: float | None
    cost_total_usd: float | None
    note: str = ""


def find_runs(root: Path) -> list[Path]:
    """Run directories (holding ``manifest.json``) at ``root`` and up to two levels below."""
    if not root.is_dir():
        raise UserInputError(f"{root}: not a directory")
    found: list[Path] = []
    for depth in ("", "*/", "*/*/"):
        found.extend(p.parent for p in root.glob(f"{depth}{MANIFEST_FILE}"))
    return sorted(set(found))


def _stats(run_dir: Path) -> RunStats:
    stats = read_stats(run_dir)
    if stats is not None:
        return stats
    return compute_stats(load_run(run_dir), resamples=0)


def history(root: Path) -> list[HistoryRow]:
    """Headline rows for every run under ``root``, oldest first."""
    rows: list[HistoryRow] = []
    for run_dir in find_runs(root):
        try:
            run = load_run(run_dir)
            stats = _stats(run_dir)
        except DabenchError as exc:
            rows.append(
                HistoryRow(
                    run_dir=str(run_dir),
                    run_id=run_dir.name,
                    started_at="",
                    k=0,
                    tasks=0,
                    arm="—",
                    episodes=0,
                    accuracy=None,
                    pass_hat_k=None,
                    score=None,
                    tool_calls_median=None,
                    cost_total_usd=None,
                    note=f"unreadable: {exc}",
                )
            )
            continue
        m = run.manifest
        identity = {a.get("name"): arm_identity(a) for a in m.arms}
        for arm in stats.arms:
            g = stats.group(arm, "overall")
            if g is None:
                continue
            total = g.n_episodes + g.n_excluded
            headline = headline_ok(g.n_episodes, total)
            notes = [] if m.finished_at else ["unfinished"]
            if not headline:
                notes.append(f"{g.n_episodes} of {total} graded: accuracy not headlined")
            rows.append(
                HistoryRow(
                    run_dir=str(run_dir),
                    run_id=m.run_id,
                    started_at=m.started_at.isoformat(timespec="seconds"),
                    k=m.k,
                    tasks=len(m.task_ids),
                    arm=arm,
                    **identity.get(arm, {}),
                    episodes=total,
                    graded=g.n_episodes,
                    accuracy=g.accuracy.estimate if headline else None,
                    pass_hat_k=g.pass_hat_k.estimate if headline else None,
                    score=g.score.estimate if headline else None,
                    tool_calls_median=g.efficiency.tool_calls_median,
                    cost_total_usd=g.efficiency.cost_total_usd,
                    note="; ".join(notes),
                )
            )
    rows.sort(key=series_key)
    return rows


def series_key(row: HistoryRow) -> tuple[str, ...]:
    """Rows of one series (arm, agent kind, model, target and its version) together, oldest
    first: a change of agent or target version is a new series, not a regression."""
    return (
        row.arm, row.agent or "", row.model or "", row.target or "", row.started_at, row.run_id
    )  # fmt: skip
