"""The closing summary ``dabench run`` prints on stdout: plain aligned text, never truncated."""

from __future__ import annotations

from pathlib import Path

from dabench.report.fmt import NA, ci, delta, pct
from dabench.stats.model import GroupStats, Interval, RunStats, headline_ok


def verdict_words(interval: Interval | None, baseline: str) -> str:
    """A paired delta's verdict in words (the 95 % CI against 0)."""
    if interval is None or interval.low is None or interval.high is None:
        return "no verdict (no confidence interval)"
    if interval.low > 0:
        return f"better than {baseline} (95% CI above 0)"
    if interval.high < 0:
        return f"worse than {baseline} (95% CI below 0)"
    return "no significant difference (95% CI includes 0)"


def _tasks(n: int) -> str:
    return f"{n} task" if n == 1 else f"{n} tasks"


def _episodes(graded: int, excluded: int) -> str:
    """The graded episodes, and how many were excluded so a rate is never read bare."""
    if not excluded:
        return str(graded)
    return f"{graded} ({excluded} of {graded + excluded} excluded: harness errors)"


def headline_accuracy(g: GroupStats) -> str:
    """An arm's accuracy [95% CI], or, when too few of its episodes were graded to speak for
    it (:data:`~dabench.stats.model.MIN_GRADED_SHARE`), "n of m graded" and no bare rate."""
    total = g.n_episodes + g.n_excluded
    if headline_ok(g.n_episodes, total) or not g.n_episodes:
        return ci(g.accuracy)  # n/a when nothing was graded
    return f"not headlined: {g.n_episodes} of {total} graded ({pct(g.accuracy.estimate)} of those)"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def closing_summary(stats: RunStats, paths: list[Path]) -> list[str]:
    """Lines of the closing summary: per arm accuracy [95% CI] and pass^k, the deltas
    against the baseline arm with their verdict in words, and the report paths."""
    k = stats.k
    lines = [f"results of run {stats.run_id} (k = {k})"]
    rows = [["arm", "tasks", "episodes", "accuracy [95% CI]", f"pass^{k}"]]
    for arm in stats.arms:
        g = stats.group(arm, "overall")
        if g is None:
            rows.append([arm, "0", "0", NA, NA])
            continue
        rows.append(
            [
                arm,
                str(g.n_tasks),
                _episodes(g.n_episodes, g.n_excluded),
                headline_accuracy(g),
                f"{pct(g.pass_hat_k.estimate)} ({_tasks(g.pass_hat_k_tasks)})",
            ]
        )
    lines += ["  " + line for line in _table(rows)]
    base = stats.baseline_arm
    deltas = [d for d in stats.deltas if d.dimension == "overall" and d.arm != base]
    if deltas:
        lines.append(f"accuracy vs baseline {base} (paired over shared tasks, in points):")
        drows: list[list[str]] = []
        for d in deltas:
            g = stats.group(d.arm, "overall")
            if g is not None and not headline_ok(g.n_episodes, g.n_episodes + g.n_excluded):
                total = g.n_episodes + g.n_excluded
                drows.append(
                    [f"{d.arm} - {base}", "not compared", f"{g.n_episodes} of {total} graded"]
                )
                continue
            if not d.n_shared_tasks or d.accuracy.estimate is None:
                drows.append([f"{d.arm} - {base}", "not compared", f"no task shared with {base}"])
                continue
            drows.append(
                [
                    f"{d.arm} - {base}",
                    f"{delta(d.accuracy)} on {d.n_shared_tasks} tasks",
                    verdict_words(d.accuracy, base),
                ]
            )
        lines += ["  " + line for line in _table(drows)]
    if stats.caveats:
        lines.append(f"{len(stats.caveats)} caveat(s) in the report, e.g.: {stats.caveats[0]}")
    for i, path in enumerate(paths):
        lines.append(("report: " if i == 0 else "        ") + str(path))
    return lines
