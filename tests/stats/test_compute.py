"""compute_stats on hand-built runs with exactly known answers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from tests.stats.builders import call, episode, grade, outcome_run, ttft_run, write_run

from dabench.errors import UserInputError
from dabench.journal.records import StepRecord
from dabench.stats import compute_stats, load_run, read_stats, write_stats

T, F = True, False


@pytest.fixture
def two_arms(tmp_path: Path) -> Path:
    return outcome_run(
        tmp_path,
        {
            "a": {"t1": [T, T, T], "t2": [T, F, T], "t3": [F, F, F], "t4": [T, F, F]},
            "b": {"t1": [T, T, T], "t2": [T, T, T], "t3": [T, T, T], "t4": [T, T, T]},
        },
        k=3,
    )


def test_accuracy_pass_hat_k_and_pass_at_k_are_exact(two_arms: Path) -> None:
    stats = compute_stats(load_run(two_arms), resamples=1000)
    a = stats.group("a", "overall")
    assert a is not None
    assert a.accuracy.estimate == pytest.approx(0.5)
    assert a.pass_hat_k.estimate == pytest.approx(0.25)
    assert a.pass_at_k == pytest.approx(0.75)
    assert a.pass_hat_curve == pytest.approx({"1": 0.5, "2": 1 / 3, "3": 0.25})
    assert a.n_tasks == 4 and a.n_episodes == 12 and a.n_excluded == 0
    assert a.accuracy.low is not None and a.accuracy.high is not None
    assert a.accuracy.low <= 0.5 <= a.accuracy.high
    b = stats.group("b", "overall")
    assert b is not None and b.pass_hat_k.estimate == 1.0


def test_paired_delta_against_the_baseline(two_arms: Path) -> None:
    stats = compute_stats(load_run(two_arms), resamples=2000)
    assert stats.baseline_arm == "a"
    delta = next(d for d in stats.deltas if d.dimension == "overall")
    assert (delta.arm, delta.baseline, delta.n_shared_tasks) == ("b", "a", 4)
    assert delta.accuracy.estimate == pytest.approx(0.5)
    assert delta.pass_hat_k.estimate == pytest.approx(0.75)
    assert delta.accuracy.low is not None and delta.accuracy.low > 0  # b never fails
    flipped = compute_stats(load_run(two_arms), baseline_arm="b", resamples=0)
    d2 = next(d for d in flipped.deltas if d.dimension == "overall")
    assert d2.accuracy.estimate == pytest.approx(-0.5)
    assert d2.accuracy.low is None  # resamples=0: point estimates only


def test_unknown_baseline_arm_is_a_clear_error(two_arms: Path) -> None:
    with pytest.raises(UserInputError, match="baseline-arm 'zz' is not an arm"):
        compute_stats(load_run(two_arms), baseline_arm="zz")


def test_stats_are_deterministic_and_seeded(two_arms: Path, synthetic_run: Path) -> None:
    run = load_run(two_arms)
    first = write_stats(two_arms, compute_stats(run, seed=5)).read_bytes()
    second = write_stats(two_arms, compute_stats(run, seed=5)).read_bytes()
    assert first == second
    assert read_stats(two_arms) == compute_stats(run, seed=5)
    syn = load_run(synthetic_run)
    one = compute_stats(syn, seed=1, resamples=500).group("a2", "overall")
    two = compute_stats(syn, seed=2, resamples=500).group("a2", "overall")
    assert one is not None and two is not None
    assert one.accuracy.estimate == two.accuracy.estimate
    assert (one.score.low, one.score.high) != (two.score.low, two.score.high)


def test_harness_errors_are_excluded_and_short_tasks_leave_pass_hat_k(tmp_path: Path) -> None:
    eps = [
        episode("a", "t1", 0),
        episode("a", "t1", 1, status="harness_error", answer=None),
        episode("a", "t1", 2),
        episode("a", "t2", 0),
        episode("a", "t2", 1),
        episode("a", "t2", 2),
    ]
    grades = [grade(e, e.status != "harness_error" and e.task_id == "t1") for e in eps]
    stats = compute_stats(load_run(write_run(tmp_path, eps, grades, k=3)), resamples=0)
    g = stats.group("a", "overall")
    assert g is not None
    assert g.n_excluded == 1 and g.n_episodes == 5
    assert g.accuracy.estimate == pytest.approx(0.5)  # t1 2/2, t2 0/3
    assert g.pass_hat_k_tasks == 1 and g.pass_hat_k.estimate == 0.0  # only t2 has 3 attempts
    assert g.failures["harness_error"] == 1
    joined = " ".join(stats.caveats)
    assert "harness error" in joined and "fewer than k = 3" in joined
    assert "transient" not in joined


def test_transient_retries_are_a_caveat(tmp_path: Path) -> None:
    eps = [episode("a", "t1", i) for i in range(3)] + [episode("b", "t1", i) for i in range(3)]
    eps[1] = eps[1].model_copy(update={"transient_retries": 2})
    eps[4] = eps[4].model_copy(update={"transient_retries": 1})
    grades = [grade(e, True) for e in eps]
    stats = compute_stats(load_run(write_run(tmp_path, eps, grades, k=3)), resamples=0)
    assert (
        "2 episode(s) needed 3 retries of transient provider or target failures "
        "(429, 5xx, timeouts; arms a, b): their latency includes the backoff." in stats.caveats
    )


def test_failure_taxonomy_and_tool_figures(tmp_path: Path) -> None:
    gate = [call(error="SEARCH_REQUIRED") for _ in range(3)]
    cases = [
        (episode("a", "t1", status="budget_exhausted", calls=gate), F),
        (episode("a", "t2", status="budget_exhausted", calls=[call(), call()]), F),
        (episode("a", "t3", status="timeout", answer=None), F),
        (episode("a", "t4", status="no_answer", answer=None), F),
        (episode("a", "t5", calls=[call(), call(error="SQL_ERROR")]), F),
        (episode("a", "t6", calls=[call(error="SQL_ERROR"), call()]), F),
        (episode("a", "t7", status="harness_error", answer=None), F),
        (episode("a", "t8", calls=[call()]), T),
    ]
    eps = [e for e, _ in cases] + [episode("a", "t9")]
    grades = [grade(e, ok) for e, ok in cases]  # t9 is never graded
    stats = compute_stats(load_run(write_run(tmp_path, eps, grades, k=1)), resamples=0)
    g = stats.group("a", "overall")
    assert g is not None
    expected = {
        "gate_refusal_loop": 1,
        "budget_exhausted": 1,
        "timeout": 1,
        "no_final_answer": 1,
        "tool_error": 1,
        "wrong_answer": 1,
        "harness_error": 1,
        "passed": 1,
        "ungraded": 1,
    }
    assert g.failures == expected
    e = g.efficiency
    # Retries: the 2nd and 3rd gated sql_query, and t6's second call.
    assert e.retries_total == 3
    calls = 3 + 2 + 2 + 2 + 1  # harness episode excluded
    errors = 3 + 1 + 1
    assert e.tool_exec_rate == pytest.approx(1 - errors / calls)
    assert e.tokens_per_tool_call == pytest.approx(8 * 1000 / calls)
    summary = stats.summary("a")
    assert summary is not None
    assert summary.badges["timeouts"] == 1 and summary.badges["harness_errors"] == 1
    assert summary.completion_rate == pytest.approx(4 / 8)  # completed among non-harness
    assert any("no grade" in c for c in stats.caveats)


def test_ves_fast_path_latency_and_enrichment(tmp_path: Path) -> None:
    tasks = [
        {"id": "t1", "suite": "s2", "fast_path": ["agg.daily"], "expected_tools": ["sql_query"]},
        {"id": "t2", "suite": "s3", "trap_classes": ["cents_units"], "expected_tools": ["search"]},
    ]
    fast = call(sql="select * from AGG.DAILY")
    eps = [
        episode("a", "t1", calls=[fast, call()], enrichment=100),
        episode("b", "t1", calls=[call()] * 8, enrichment=0),
        episode("a", "t2", status="timeout", wall_s=50.0, answer=None, suite="s3"),
        episode("b", "t2", calls=[call("search")], wall_s=30.0, suite="s3"),
    ]
    grades = [grade(eps[0], T), grade(eps[1], T), grade(eps[2], F), grade(eps[3], T)]
    run_dir = write_run(
        tmp_path,
        eps,
        grades,
        k=1,
        tasks=tasks,
        experiment={"settings": {"episode_timeout_s": 120}},
    )
    stats = compute_stats(load_run(run_dir), resamples=0)
    a, b = stats.group("a", "overall"), stats.group("b", "overall")
    assert a is not None and b is not None
    # min calls over passed episodes of t1 is 2 (arm a): a gets 1, b gets sqrt(3/9).
    assert a.efficiency.ves == pytest.approx((1.0 + 0.0) / 2)
    assert b.efficiency.ves == pytest.approx((math.sqrt(3 / 9) + 1.0) / 2)
    assert a.efficiency.fast_path_rate == 1.0 and b.efficiency.fast_path_rate == 0.0
    assert a.efficiency.latency_ok_s == pytest.approx(10.0)
    assert a.efficiency.latency_all_s == pytest.approx((10.0 + 120.0) / 2)
    assert a.efficiency.enrichment_tokens_total == 100
    assert b.efficiency.errors_before_success_mean == 0.0
    trap = stats.group("b", "trap_class", "cents_units")
    assert trap is not None and trap.accuracy.estimate == 1.0
    summary_b = stats.summary("b")
    assert summary_b is not None and summary_b.badges["tool_mismatches"] == 0
    summary_a = stats.summary("a")
    assert summary_a is not None and summary_a.badges["tool_mismatches"] == 1  # t2: no search


def test_missing_tasks_json_is_a_caveat_not_a_crash(two_arms: Path) -> None:
    stats = compute_stats(load_run(two_arms), resamples=0)
    assert not [g for g in stats.groups if g.dimension == "trap_class"]
    assert any("no task snapshot" in c for c in stats.caveats)
    assert any("k = 3" in c for c in stats.caveats) is False  # k >= 3: no small-k caveat


def test_lifecycle_funnel(tmp_path: Path) -> None:
    def steps(*passed: bool) -> list[StepRecord]:
        names = ("teach", "recall", "promote")
        return [
            StepRecord(name=n, kind="episode", identity="teacher", passed=p)
            for n, p in zip(names, passed, strict=False)
        ]

    eps = [
        episode("a", "p1", 0, suite="s5", steps=steps(T, T, T)),
        episode("a", "p1", 1, suite="s5", steps=steps(T, F, T)),
        episode("a", "p2", 0, suite="s5", steps=steps(F, T, T)),
    ]
    grades = [grade(e, all(s.passed for s in e.steps)) for e in eps]
    stats = compute_stats(load_run(write_run(tmp_path, eps, grades, k=2)), resamples=0)
    funnel = stats.funnel["a"]
    assert [s.name for s in funnel] == ["teach", "recall", "promote"]
    assert [(s.episodes, s.passed, s.reached) for s in funnel] == [(3, 2, 2), (3, 2, 1), (3, 3, 1)]


def test_lifecycle_funnel_follows_protocol_order(tmp_path: Path) -> None:
    """A verify step stands right after the step it checks, not after every named step."""
    plays = [
        ("teach", "episode", None),
        ("captured", "verify", T),
        ("recall", "episode", T),
        ("promote", "review", T),
        ("promoted", "verify", F),
        ("transfer", "episode", T),
    ]
    steps = [StepRecord(name=n, kind=k, identity="teacher", passed=p) for n, k, p in plays]
    eps = [episode("a", "p1", 0, suite="s5", steps=steps)]
    run = write_run(tmp_path, eps, [grade(eps[0], False)], k=1)
    stats = compute_stats(load_run(run), resamples=0)
    funnel = stats.funnel["a"]
    assert [s.name for s in funnel] == ["captured", "recall", "promote", "promoted", "transfer"]
    assert [s.reached for s in funnel] == [1, 1, 1, 0, 0]


def test_synthetic_run_shows_the_planted_gap(synthetic_run: Path) -> None:
    stats = compute_stats(load_run(synthetic_run))
    delta = next(d for d in stats.deltas if d.dimension == "overall")
    assert delta.arm == "a2" and delta.accuracy.low is not None and delta.accuracy.low > 0
    for g in stats.groups:
        iv = g.accuracy
        assert iv.low is not None and iv.high is not None and iv.estimate is not None
        assert iv.low - 1e-12 <= iv.estimate <= iv.high + 1e-12
    assert {g.value for g in stats.groups if g.dimension == "trap_class"}
    assert stats.summary("a2").adjusted_overall > stats.summary("a0").adjusted_overall  # type: ignore[union-attr,operator]


def test_not_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="not a directory"):
        load_run(tmp_path / "nope")
    (tmp_path / "tasks.json").write_text("[{]", encoding="utf-8")
    (tmp_path / "manifest.json").write_text("{}", encoding="utf-8")
    with pytest.raises(Exception, match="manifest"):
        load_run(tmp_path)


def test_time_to_first_token_per_arm(tmp_path: Path) -> None:
    stats = compute_stats(load_run(ttft_run(tmp_path)), resamples=0)
    kb, llm = stats.group("kb", "overall"), stats.group("llm", "overall")
    assert kb is not None and llm is not None
    # Completed episodes with a TTFT only: 100..500 (the timeout's 9000 and the harness
    # error's 7 are left out, as is the completed episode without one).
    assert (kb.efficiency.ttft_ms_p50, kb.efficiency.ttft_n) == (300.0, 5)
    assert kb.efficiency.ttft_ms_p95 == pytest.approx(480.0)  # 400 + 0.8 * (500 - 400)
    s3 = stats.group("kb", "suite", "s3")
    assert s3 is not None and (s3.efficiency.ttft_ms_p50, s3.efficiency.ttft_n) == (300.0, 2)
    assert s3.efficiency.ttft_ms_p95 == pytest.approx(390.0)
    assert (llm.efficiency.ttft_ms_p50, llm.efficiency.ttft_ms_p95) == (None, None)
    assert llm.efficiency.ttft_n == 0
    written = json.loads(write_stats(tmp_path, stats).read_text(encoding="utf-8"))
    eff = {g["arm"]: g["efficiency"] for g in written["groups"] if g["dimension"] == "overall"}
    assert eff["llm"]["ttft_ms_p50"] is None and eff["kb"]["ttft_ms_p95"] == pytest.approx(480.0)
    assert eff["kb"]["ttft_source"] == "measured" and eff["llm"]["ttft_source"] is None


def test_ttft_sources_and_unknown_usage_are_kept_apart(tmp_path: Path) -> None:
    """TTFT measured by dabench and reported by Kibana are labelled (``mixed`` when an arm has
    both); an episode whose usage was not reported has unknown tokens, never 0."""
    eps = [
        episode("a", "t1", ttft_ms=100.0, ttft_source="measured", tokens=500),
        episode("a", "t2", ttft_ms=900.0, ttft_source="reported", tokens=0, usage_known=False),
        episode("b", "t1", ttft_ms=800.0, ttft_source="reported", tokens=0, usage_known=False),
        episode("b", "t2", ttft_ms=700.0, ttft_source="reported", tokens=0, usage_known=False),
    ]
    run = write_run(tmp_path, eps, [grade(e, True) for e in eps], k=1)
    stats = compute_stats(load_run(run), resamples=0)
    a, b = stats.group("a", "overall"), stats.group("b", "overall")
    assert a is not None and b is not None
    assert (a.efficiency.ttft_source, b.efficiency.ttft_source) == ("mixed", "reported")
    assert (a.efficiency.tokens_mean, a.efficiency.tokens_n) == (500.0, 1)
    assert (b.efficiency.tokens_mean, b.efficiency.tokens_n) == (None, 0)
    assert b.efficiency.tokens_per_tool_call is None
