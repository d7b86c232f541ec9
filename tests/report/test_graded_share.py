"""An arm with most of its episodes excluded (harness errors) never headlines a bare accuracy,
and history keeps one series per (arm, agent kind, model, target version)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from dabench.report.build import write_reports
from dabench.report.history import history
from dabench.report.summary import closing_summary
from dabench.stats.model import headline_ok
from dabench.stats.synthetic import SyntheticArm, SyntheticSpec, write_synthetic_run
from dabench.store.collect import arm_identity
from dabench.store.records import ArmStatRecord
from dabench.store.trend import trends


def _run(tmp_path: Path) -> Path:
    spec = SyntheticSpec(
        arms=[SyntheticArm("a0", 0.5, "a0"), SyntheticArm("broken", 3.0, "a2", harness_errors=0.7)],
        tasks=30,
        k=1,
        run_id="mostly-excluded",
    )
    return write_synthetic_run(tmp_path / "run", spec)


def test_the_threshold() -> None:
    assert headline_ok(80, 100) and not headline_ok(79, 100) and not headline_ok(0, 0)


def test_an_arm_with_few_graded_episodes_is_not_headlined(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    files = write_reports(run_dir, resamples=100)
    g = files.stats.group("broken", "overall")
    assert g is not None and not headline_ok(g.n_episodes, g.n_episodes + g.n_excluded)
    said = f"not headlined: {g.n_episodes} of {g.n_episodes + g.n_excluded} graded"
    report = (run_dir / "report.md").read_text(encoding="utf-8")
    ranking = report.split("\n## Ranking")[1].split("\n## ")[0]
    broken = next(line for line in ranking.splitlines() if line.startswith("| 1 | `broken`"))
    assert said in broken
    assert said in (run_dir / "report.html").read_text(encoding="utf-8")
    summary = "\n".join(closing_summary(files.stats, []))
    assert said in summary
    assert f"broken - a0  not compared  {g.n_episodes} of" in summary
    listed = {r.arm: r for r in history(tmp_path)}
    assert listed["broken"].accuracy is None and "accuracy not headlined" in listed["broken"].note
    assert listed["a0"].accuracy is not None and listed["a0"].note == ""


def _record(run: str, day: int, agent: str, target: str, accuracy: float) -> ArmStatRecord:
    return ArmStatRecord(
        run_id=run, arm="elastic", dimension="overall", value="all",
        started_at=datetime(2026, 1, day, tzinfo=UTC), agent=agent, model="m", target=target,
        k=1, n_tasks=10, n_episodes=10, n_excluded=0, accuracy=accuracy, accuracy_low=None,
        accuracy_high=None, pass_hat_k=None, pass_hat_k_low=None, pass_hat_k_high=None,
        score=None, tool_calls_median=None, tokens_mean=None, cost_total_usd=None,
    )  # fmt: skip


def test_a_new_agent_or_target_version_is_a_new_series() -> None:
    records = [
        _record("r1", 1, "oracle", "kibana:k@9.2.0", 1.0),
        _record("r2", 2, "probe", "kibana:k@9.2.0", 0.0),
        _record("r3", 3, "probe", "kibana:k@9.3.0", 0.5),
        _record("r4", 4, "probe", "kibana:k@9.3.0", 0.6),
    ]
    series = trends(records)
    assert [(s.agent, s.target, len(s.points)) for s in series] == [
        ("oracle", "kibana:k@9.2.0", 1),
        ("probe", "kibana:k@9.2.0", 1),
        ("probe", "kibana:k@9.3.0", 2),
    ]
    assert [s.change() for s in series][-1] is not None


def test_arm_identity_reads_the_target_version() -> None:
    raw = {
        "agent": {"kind": "kibana", "model": None},
        "target": {"kind": "kibana", "label": "kibana:elastic-ai-agent", "kibana_version": "9.3.0"},
    }
    assert arm_identity(raw) == {
        "agent": "kibana", "model": None, "target": "kibana:elastic-ai-agent@9.3.0"
    }  # fmt: skip
