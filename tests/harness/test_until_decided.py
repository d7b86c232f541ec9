"""``dabench run --until-decided``: rounds graded one by one, an arm stopped once its
comparison is decided, the state recomputed from the journal on resume, and the report's
stopping section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.stats.builders import episode, grade
from typer.testing import CliRunner

from dabench.cli import app
from dabench.errors import UserInputError
from dabench.journal.records import Episode, Grade
from dabench.journal.sequential import read_sequential
from dabench.runner.until_decided import decide

cli = CliRunner()


@pytest.mark.slow
def test_a_clear_effect_stops_after_one_round(tmp_path: Path, real_world: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "--suite", "s3", "--arms", "a0,a2", "--agent", "probe", "--k", "4",
            "--until-decided", "--world", str(real_world), "--out", str(out),
            "--no-progress"]  # fmt: skip
    result = cli.invoke(app, args)
    assert result.exit_code == 0, result.output
    record = read_sequential(out)
    assert record is not None and record.rounds_run == 1 and record.max_rounds == 4
    a2 = next(d for d in record.arms if d.arm == "a2")
    assert a2.decision == "better" and a2.low is not None and a2.low > 0
    episodes = [Episode.model_validate_json(line) for line in (out / "episodes.jsonl").open()]
    assert {e.attempt for e in episodes} == {0}  # one round only
    assert record.episodes_run == len(episodes) == record.episodes_fixed_design // 4
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["k"] == 4  # the fixed design's k: pass^4 is n/a for every task
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Sequential stopping" in report and "| `a2` | 1 | better |" in report
    assert "pass^4 counts only tasks that reached 4 attempts" in report
    # The closing summary on stdout says where it stopped, and no pass^4 of zero tasks.
    stopped = (
        f"--until-decided stopped after round 1 of 4: {record.episodes_run} of "
        f"{record.episodes_fixed_design} episodes of the fixed design run, "
        f"{record.episodes_fixed_design - record.episodes_run} saved (a2 better"
    )
    assert stopped in result.stdout
    assert "results of run run (at most 4 rounds)" in result.stdout
    assert "pass^4: no task reached 4 attempts" in result.stdout
    assert "(0 tasks)" not in result.stdout
    again = cli.invoke(app, ["run", "--resume", str(out), "--until-decided", "--no-progress"])
    assert again.exit_code == 0, again.output  # nothing left: recomputed from the journal
    assert read_sequential(out) == record


def test_decisions_are_recomputed_from_graded_rounds() -> None:
    """a2 beats a0 on every task in round 0; a harness error leaves its task out."""
    eps: list[Episode] = []
    grades: dict[str, Grade] = {}
    for t in range(20):
        for arm, ok in (("a0", False), ("a2", True), ("a3", t % 4 == 0)):
            status = "harness_error" if (arm, t) == ("a2", 0) else "completed"
            ep = episode(arm, f"t{t}", status=status)
            eps.append(ep)
            grades[ep.key] = grade(ep, ok)
    out = {d.arm: d for d in decide(eps, grades, "a0", ["a0", "a2", "a3"], alpha=0.05,
                                     min_delta=None, rounds=1)}  # fmt: skip
    assert out["a0"].decision == "baseline"
    assert out["a2"].decision == "better" and out["a2"].rounds == 1
    assert out["a3"].decision == "running"  # +25 points on 20 tasks: not yet
    assert out["a3"].low is not None and out["a3"].low < 0 < out["a3"].high  # type: ignore[operator]


def test_min_delta_needs_until_decided() -> None:
    result = cli.invoke(app, ["run", "--smoke", "--min-delta", "0.1"])
    assert isinstance(result.exception, UserInputError)
    assert "--min-delta needs --until-decided" in str(result.exception)
