"""The regression gate on synthetic and hand-built runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.stats.builders import call, episode, grade, outcome_run, write_run

from dabench.errors import UserInputError
from dabench.stats import load_run
from dabench.stats.gate import compare_runs, load_thresholds
from dabench.stats.synthetic import SyntheticArm, SyntheticSpec, write_synthetic_run

T, F = True, False
GOOD = {"t1": [T, T], "t2": [T, T], "t3": [T, F], "t4": [T, T]}


@pytest.fixture(scope="module")
def degraded_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A baseline run and a run whose arm 'a2' lost its knowledge layer (same arm name)."""
    root = tmp_path_factory.mktemp("gate")
    base = write_synthetic_run(root / "base", SyntheticSpec(tasks=48, run_id="base"))
    arms = [
        SyntheticArm("a0", 0.2, "a0", mean_calls=9.0),
        SyntheticArm("a2", 0.2, "a2-no-enrichment", mean_calls=9.0),
    ]
    bad = write_synthetic_run(root / "bad", SyntheticSpec(arms=arms, tasks=48, run_id="bad"))
    return base, bad


def test_a_run_against_itself_passes(degraded_pair: tuple[Path, Path]) -> None:
    base, _ = degraded_pair
    result = compare_runs(load_run(base), load_run(base), load_thresholds(), resamples=200)
    assert not result.regressed
    assert {r.suite for r in result.rows} >= {"overall", "s1", "s2", "s3"}
    assert all(r.accuracy_drop == 0 for r in result.rows)


def test_degraded_profile_under_the_same_arm_name_fails_the_gate(
    degraded_pair: tuple[Path, Path],
) -> None:
    base, bad = degraded_pair
    result = compare_runs(load_run(bad), load_run(base), load_thresholds(), resamples=500)
    assert result.regressed
    failing = {(r.arm, r.suite) for r in result.rows if r.regressions}
    assert ("a2", "overall") in failing
    overall = next(r for r in result.rows if r.arm == "a2" and r.suite == "overall")
    assert overall.accuracy_drop is not None and overall.accuracy_drop > 15
    assert overall.accuracy_delta_high is not None and overall.accuracy_delta_high < 0
    assert any("target/profile differs" in w for w in result.warnings)


def test_generous_thresholds_let_the_same_runs_pass(
    degraded_pair: tuple[Path, Path], tmp_path: Path
) -> None:
    base, bad = degraded_pair
    path = tmp_path / "t.yaml"
    path.write_text(
        "default: {max_accuracy_drop: 100, max_pass_hat_k_drop: 100, max_tool_call_ratio: 10}\n",
        encoding="utf-8",
    )
    result = compare_runs(load_run(bad), load_run(base), load_thresholds(path), resamples=0)
    assert not result.regressed


def _calls_run(run_dir: Path, calls_per_episode: int) -> Path:
    eps, grades = [], []
    for task_id, results in GOOD.items():
        for attempt, ok in enumerate(results):
            ep = episode("a", task_id, attempt, calls=[call()] * calls_per_episode)
            eps.append(ep)
            grades.append(grade(ep, ok))
    return write_run(run_dir, eps, grades, k=2)


def test_tool_call_ratio_alone_regresses(tmp_path: Path) -> None:
    base = _calls_run(tmp_path / "b", 1)
    same = _calls_run(tmp_path / "s", 1)
    chatty = _calls_run(tmp_path / "c", 4)
    limits = load_thresholds()
    assert not compare_runs(load_run(same), load_run(base), limits, resamples=0).regressed
    result = compare_runs(load_run(chatty), load_run(base), limits, resamples=0)
    overall = next(r for r in result.rows if r.suite == "overall")
    assert overall.accuracy_drop == 0
    assert overall.tool_call_ratio == pytest.approx(4.0)
    assert overall.regressions == ["tool calls x4.00 of baseline (limit x1.5)"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"task_set_hash": "other"}, "different task sets"),
        ({"world_hash": "other"}, "different worlds"),
        ({"arms": ["a", "z"]}, "different arms"),
        ({"agents": {"a": {"kind": "llm", "provider": "fake", "model": "m2"}}}, "agent settings"),
    ],
)
def test_incomparable_runs_are_refused_unless_forced(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    base = outcome_run(tmp_path / "b", {"a": GOOD}, k=2)
    outcomes = {"a": GOOD, "z": GOOD} if "arms" in change else {"a": GOOD}
    run = outcome_run(tmp_path / "r", outcomes, k=2, **change)  # type: ignore[arg-type]
    with pytest.raises(UserInputError, match=message):
        compare_runs(load_run(run), load_run(base), load_thresholds(), resamples=0)
    forced = compare_runs(load_run(run), load_run(base), load_thresholds(), force=True, resamples=0)
    assert any(message in p for p in forced.problems)


def test_require_significant_ignores_noise(tmp_path: Path) -> None:
    base = outcome_run(tmp_path / "b", {"a": GOOD}, k=2)
    worse = dict(GOOD, t4=[F, T])  # one flipped attempt: 12.5 points, within noise
    run = outcome_run(tmp_path / "r", {"a": worse}, k=2)
    plain = compare_runs(load_run(run), load_run(base), load_thresholds(), resamples=500)
    assert plain.regressed
    path = tmp_path / "t.yaml"
    path.write_text(
        "default: {max_accuracy_drop: 5, max_pass_hat_k_drop: 10, max_tool_call_ratio: 1.5,"
        " require_significant: true}\n",
        encoding="utf-8",
    )
    strict = compare_runs(load_run(run), load_run(base), load_thresholds(path), resamples=500)
    assert not strict.regressed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("default: {max_accuracy_drop: -1}\n",
         ":1: thresholds field 'default.max_accuracy_drop': Input should be greater than or equal"),
        ("default:\n  max_accuracy_drop: [\n", r":\d+: invalid YAML"),
        ("default: {}\nsuites: {s1: {max_acuracy_drop: 3}}\n",
         ":2: thresholds field 'suites.s1.max_acuracy_drop': unknown field"),
        ("default: {max_accuracy_drop: 5}\ndefault: {max_accuracy_drop: 6}\n",
         ":2: key 'default' is given twice"),
        ("defaults: {max_accuracy_drop: 5}\n",
         ":1: thresholds field 'defaults': unknown field"),
        ("default: {}\nsuites:\n  S1: {max_accuracy_drop: 0}\n",
         ":3: thresholds field 'suites.S1': key 'S1': Input should be 's1', "),
        ("default: {}\nsuites: {s9: {max_accuracy_drop: 5}}\n",
         ":2: thresholds field 'suites.s9': key 's9': Input should be 's1', "),
        ("default: {max_accuracy_drop: 1000}\n",
         ":1: thresholds field 'default.max_accuracy_drop': Input should be less than or equal "
         "to 100"),
        ('default: {max_accuracy_drop: "5"}\n',
         ":1: thresholds field 'default.max_accuracy_drop': Input should be a valid number, "
         "got '5'"),
        ("default: {require_significant: \"yes\"}\n",
         ":1: thresholds field 'default.require_significant': Input should be a valid boolean"),
        ("", ": empty thresholds file"),
        ("- 5\n", ":1: a thresholds file is a mapping"),
    ],
)  # fmt: skip
def test_bad_thresholds_files_name_the_file_line_and_field(
    text: str, expected: str, tmp_path: Path
) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserInputError) as refused:
        load_thresholds(path)
    assert re.match(re.escape(str(path)) + expected.replace("(", r"\("), str(refused.value)), str(
        refused.value
    )


def test_a_missing_thresholds_file_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="cannot read"):
        load_thresholds(tmp_path / "missing.yaml")


def test_packaged_thresholds_merge_suite_overrides() -> None:
    limits = load_thresholds()
    assert limits.for_suite("s1").max_accuracy_drop == 10.0
    assert limits.for_suite("s1").max_pass_hat_k_drop == limits.default.max_pass_hat_k_drop
    assert limits.for_suite("s9") == limits.default
