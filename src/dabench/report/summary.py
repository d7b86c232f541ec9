"""The closing summary ``dabench run`` prints on stdout: plain aligned text, never truncated."""

from __future__ import annotations

from pathlib import Path

from dabench.journal.sequential import SequentialRecord
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


def stopping_line(record: SequentialRecord) -> str:
    """Where ``--until-decided`` stopped and the episodes it saved, in one line."""
    saved = record.episodes_fixed_design - record.episodes_run
    decided = ", ".join(f"{d.arm} {d.decision}" for d in record.arms if d.arm != record.baseline)
    return (
        f"--until-decided stopped after round {record.rounds_run} of {record.max_rounds}: "
        f"{record.episodes_run} of {record.episodes_fixed_design} episodes of the fixed design "
        f"run, {saved} saved ({decided}; alpha {record.alpha:g})"
    )


def closing_summary(
    stats: RunStats, paths: list[Path], sequential: SequentialRecord | None = None
) -> list[str]:
    """Lines of the closing summary: per arm accuracy [95% CI] and pass^k (left out when no
    task reached k attempts, as after an early ``--until-decided`` stop), where sequential
    stopping stopped, the deltas against the baseline arm with their verdict in words, and
    the report paths."""
    k = stats.k
    groups = {arm: stats.group(arm, "overall") for arm in stats.arms}
    show_pass_k = any(g is not None and g.pass_hat_k_tasks for g in groups.values())
    design = f"at most {k} rounds" if sequential is not None else f"k = {k}"
    lines = [f"results of run {stats.run_id} ({design})"]
    rows = [["arm", "tasks", "episodes", "accuracy [95% CI]"] + ([f"pass^{k}"] * show_pass_k)]
    for arm, g in groups.items():
        if g is None:
            rows.append([arm, "0", "0", NA] + [NA] * show_pass_k)
            continue
        passk = (
            f"{pct(g.pass_hat_k.estimate)} ({_tasks(g.pass_hat_k_tasks)})"
            if g.pass_hat_k_tasks
            else NA
        )
        rows.append(
            [arm, str(g.n_tasks), _episodes(g.n_episodes, g.n_excluded), headline_accuracy(g)]
            + [passk] * show_pass_k
        )
    lines += ["  " + line for line in _table(rows)]
    if not show_pass_k and k > 1:
        lines.append(f"  pass^{k}: no task reached {k} attempts")
    if sequential is not None:
        lines.append(stopping_line(sequential))
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
