"""Per-task discrimination on hand-built runs whose correlations are known exactly."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from tests.stats.builders import outcome_run

from dabench.stats import compute_stats, load_run
from dabench.stats.discrimination import most_informative, non_discriminating, task_discrimination
from dabench.stats.frame import build_frame
from dabench.stats.model import TaskDiscrimination

T, F = True, False

# Three arms, two attempts each: six respondents. "easy" is passed by all; "never" by none;
# "good" is passed by exactly the strong respondents; "bad" by exactly the weak ones.
OUTCOMES = {
    "strong": {
        "easy": [T, T],
        "never": [F, F],
        "good": [T, T],
        "bad": [F, F],
        "x1": [T, T],
        "x2": [T, T],
    },
    "mid": {
        "easy": [T, T],
        "never": [F, F],
        "good": [T, F],
        "bad": [F, T],
        "x1": [T, F],
        "x2": [F, T],
    },
    "weak": {
        "easy": [T, T],
        "never": [F, F],
        "good": [F, F],
        "bad": [T, T],
        "x1": [F, F],
        "x2": [F, F],
    },
}


def _rest_corr(task: str) -> float:
    """The item-rest correlation computed the long way, for comparison."""
    xs: list[float] = []
    rest: list[float] = []
    for tasks in OUTCOMES.values():
        for attempt in range(2):
            x = float(tasks[task][attempt])
            others = [float(v[attempt]) for t, v in tasks.items() if t != task]
            xs.append(x)
            rest.append(sum(others) / len(others))
    return float(np.corrcoef(xs, rest)[0, 1])


@pytest.fixture
def rows(tmp_path: Path) -> dict[str, TaskDiscrimination]:
    frame = build_frame(load_run(outcome_run(tmp_path, OUTCOMES, k=2)))
    return {r.task: r for r in task_discrimination([frame])}


def test_flags_and_exact_point_biserial(rows: dict[str, TaskDiscrimination]) -> None:
    assert rows["easy"].flag == "all_pass" and rows["easy"].point_biserial is None
    assert rows["never"].flag == "all_fail" and rows["never"].information == 0.0
    good, bad = rows["good"], rows["bad"]
    assert good.respondents == 6 and good.passed == 3 and good.pass_rate == 0.5
    assert good.per_arm == {"mid": 0.5, "strong": 1.0, "weak": 0.0}
    assert good.point_biserial == pytest.approx(_rest_corr("good"))
    assert good.point_biserial is not None and good.point_biserial > 0.2 and good.flag == "ok"
    assert good.information == pytest.approx(0.25 * good.point_biserial**2)
    assert bad.point_biserial == pytest.approx(_rest_corr("bad"))
    assert bad.point_biserial is not None and bad.point_biserial < 0 and bad.flag == "negative"
    assert bad.information == 0.0
    assert {r.task for r in non_discriminating(list(rows.values()))} == {"easy", "never", "bad"}


def test_most_informative_ranks_by_information(rows: dict[str, TaskDiscrimination]) -> None:
    top = most_informative(list(rows.values()), 2)
    assert top[0].task in {"good", "x1", "x2"}
    assert all(r.information >= o.information for r in top for o in rows.values() if o not in top)
    assert most_informative(list(rows.values()), 0) == []


def test_too_few_respondents_gives_rates_only(tmp_path: Path) -> None:
    run = outcome_run(tmp_path, {"a": {"t1": [T], "t2": [F]}, "b": {"t1": [F], "t2": [F]}}, k=1)
    by_task = {r.task: r for r in task_discrimination([build_frame(load_run(run))])}
    assert by_task["t1"].flag == "too_few" and by_task["t1"].point_biserial is None
    assert by_task["t1"].per_arm == {"a": 1.0, "b": 0.0}
    assert by_task["t2"].flag == "all_fail"


def test_runs_pool_their_respondents(tmp_path: Path) -> None:
    one = build_frame(load_run(outcome_run(tmp_path / "one", OUTCOMES, k=2)))
    two = build_frame(load_run(outcome_run(tmp_path / "two", OUTCOMES, k=2)))
    pooled = {r.task: r for r in task_discrimination([one, two])}
    assert pooled["good"].respondents == 12
    # The same data twice: the correlation is unchanged, only better supported.
    assert pooled["good"].point_biserial == pytest.approx(_rest_corr("good"))


def test_stats_json_and_report_carry_it(tmp_path: Path) -> None:
    stats = compute_stats(load_run(outcome_run(tmp_path, OUTCOMES, k=2)), resamples=200)
    flags = {d.task: d.flag for d in stats.discrimination}
    assert flags["good"] == "ok" and flags["bad"] == "negative"
    r = next(d.point_biserial for d in stats.discrimination if d.task == "good")
    assert r is not None and math.isfinite(r)


def test_plan_subset_prints_the_most_informative_tasks(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dabench.cli import app

    run = outcome_run(tmp_path, OUTCOMES, k=2)
    result = CliRunner().invoke(app, ["plan", "--baseline-run", str(run), "--subset", "3"])
    assert result.exit_code == 0, result.output
    assert "the 3 most informative of 6 tasks" in result.output
    selection = next(ln for ln in result.output.splitlines() if "experiment selection" in ln)
    picked = selection.split("[", 1)[1].rstrip("]}").split(", ")
    info = {r.task: r.information for r in task_discrimination([build_frame(load_run(run))])}
    assert len(picked) == 3 and min(info[t] for t in picked) >= max(
        v for t, v in info.items() if t not in picked
    )
    assert "easy" not in picked and "never" not in picked
    alone = CliRunner().invoke(app, ["plan", "--rates", "0.5", "--subset", "2"])
    assert alone.exit_code != 0 and "--subset N needs --baseline-run" in str(alone.exception)


def test_plan_subset_pools_the_respondents_of_other_runs(tmp_path: Path) -> None:
    """Two arms with k = 1 are too few respondents to rank; pooling a run of other agents on
    the same tasks gives enough, and the ranking is that of the pooled frames."""
    from typer.testing import CliRunner

    from dabench.cli import app

    small = outcome_run(tmp_path / "small", {a: OUTCOMES[a] for a in ("strong", "weak")}, k=1)
    other = outcome_run(tmp_path / "other", OUTCOMES, k=2)
    alone = CliRunner().invoke(app, ["plan", "--baseline-run", str(small), "--subset", "2"])
    assert alone.exit_code == 0, alone.output
    assert "no task separates" in alone.output
    pooled = CliRunner().invoke(
        app,
        ["plan", "--baseline-run", str(small), "--subset", "2", "--pool", str(other)],
    )
    assert pooled.exit_code == 0, pooled.output
    assert "(respondents of 2 runs)" in pooled.output and "no task separates" not in pooled.output
    frames = [build_frame(load_run(r)) for r in (small, other)]
    info = {r.task: r.information for r in task_discrimination(frames)}
    selection = next(ln for ln in pooled.output.splitlines() if "experiment selection" in ln)
    picked = selection.split("[", 1)[1].rstrip("]}").split(", ")
    assert min(info[t] for t in picked) >= max(v for t, v in info.items() if t not in picked)
    assert "bad" not in picked and "easy" not in picked
    lone = CliRunner().invoke(app, ["plan", "--baseline-run", str(small), "--pool", str(other)])
    assert lone.exit_code != 0 and "--pool RUN only adds respondents" in str(lone.exception)


def test_html_report_shows_the_discrimination_table(tmp_path: Path) -> None:
    from dabench.report.build import write_reports

    run = outcome_run(tmp_path, OUTCOMES, k=2)
    html = write_reports(run, resamples=200).html_path.read_text(encoding="utf-8")
    section = html.split('<section id="discrimination"', 1)[1].split("</section>", 1)[0]
    assert '<a href="#discrimination">Discrimination</a>' in html
    assert "6 tasks; 3 discriminate" in section
    rows = {
        row.split("<code>", 1)[1].split("</code>", 1)[0]: row
        for row in section.split("<tr class=")[1:]
    }
    assert set(rows) == set(OUTCOMES["strong"])
    good = rows["good"]
    assert good.startswith('"disc-ok"') and f"{_rest_corr('good'):.2f}" in good
    assert ">100%<" in good and ">0%<" in good and ">3/6<" in good
    assert 'title="does not discriminate in this run">negative<' in rows["bad"]
    assert 'title="does not discriminate in this run">all pass<' in rows["easy"]
    assert 'title="does not discriminate in this run">all fail<' in rows["never"]
