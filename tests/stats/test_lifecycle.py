"""S5 lifecycle metrics from hand-built journals with known rates, in stats.json and reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.stats.builders import episode, grade, write_run

from dabench.journal.records import StepRecord
from dabench.report.build import write_reports
from dabench.stats import compute_stats, load_run
from dabench.stats.lifecycle import lifecycle_metrics, metric_counts, protocol_step_metrics
from dabench.tasks.model import Protocol

T, F = True, False

PROTOCOL: dict[str, Any] = {
    "id": "s5.p1",
    "suite": "s5",
    "category": "lifecycle",
    "difficulty": "hard",
    "fact": "Our flagship store is Seattle Pike.",
    "steps": [
        {"kind": "episode", "name": "teach", "identity": "teacher", "prompt": "remember"},
        {
            "kind": "verify",
            "name": "captured",
            "metric": "capture",
            "expect": {"insights": {"status": "pending"}},
        },
        {
            "kind": "episode",
            "name": "recall",
            "metric": "recall",
            "identity": "teacher",
            "prompt": "which?",
            "grading": {"kind": "abstain"},
        },
        {
            "kind": "verify",
            "name": "dup",
            "metric": "duplicate",
            "expect": {"insights": {"count": 1}},
        },
    ],
}


def _steps(captured: bool, recall: bool | None, dup_ok: bool) -> list[StepRecord]:
    return [
        StepRecord(name="teach", kind="episode", identity="teacher", passed=None),
        StepRecord(name="captured", kind="verify", identity="admin", passed=captured),
        StepRecord(name="recall", kind="episode", identity="teacher", passed=recall),
        StepRecord(name="dup", kind="verify", identity="admin", passed=dup_ok),
    ]


def _run(tmp_path: Path) -> Path:
    eps = [
        # arm a3: 4 attempts, capture 3/4, recall 2/3 (one step without verdict), 1 duplicate
        episode("a3", "s5.p1", 0, suite="s5", steps=_steps(T, T, T)),
        episode("a3", "s5.p1", 1, suite="s5", steps=_steps(T, F, T)),
        episode("a3", "s5.p1", 2, suite="s5", steps=_steps(F, None, F)),
        episode("a3", "s5.p1", 3, suite="s5", steps=_steps(T, T, T)),
        # a harness error never counts
        episode("a3", "s5.p1", 4, suite="s5", status="harness_error", steps=_steps(F, F, F)),
        # arm b: 2 attempts, every step passes
        episode("b", "s5.p1", 0, suite="s5", steps=_steps(T, T, T)),
        episode("b", "s5.p1", 1, suite="s5", steps=_steps(T, T, T)),
        # an ordinary task is not a protocol
        episode("b", "t1", 0),
    ]
    grades = [grade(e, bool(e.steps) and all(s.passed is not False for s in e.steps)) for e in eps]
    grades[-1] = grade(eps[-1], True)
    task = {"id": "t1", "suite": "s2", "category": "analytical", "difficulty": "medium"}
    return write_run(tmp_path, eps, grades, k=2, tasks=[PROTOCOL, task])


def test_rates_counts_and_pass_hat_k(tmp_path: Path) -> None:
    stats = compute_stats(load_run(_run(tmp_path)), resamples=0)
    assert set(stats.lifecycle) == {"a3", "b"}
    a3 = stats.lifecycle["a3"]
    rates = {m.metric: (m.count, m.n, m.rate) for m in a3.metrics}
    assert rates == {
        "capture": (3, 4, 0.75),
        "recall": (2, 3, 2 / 3),
        "duplicate": (1, 4, 0.25),  # the duplicate rate: failed duplicate checks
    }
    assert [m.metric for m in a3.metrics] == ["capture", "recall", "duplicate"]
    (p,) = a3.protocols
    # 2 of 4 graded attempts passed every step: pass^2 = C(2,2)/C(4,2) = 1/6
    assert (p.protocol, p.attempts, p.passed) == ("s5.p1", 4, 2)
    assert p.pass_hat_k is not None and abs(p.pass_hat_k - 1 / 6) < 1e-12
    assert p.pass_at_k is not None and abs(p.pass_at_k - 5 / 6) < 1e-12
    assert a3.pass_hat_k == p.pass_hat_k
    b = stats.lifecycle["b"]
    assert {m.metric: m.rate for m in b.metrics} == {"capture": 1.0, "recall": 1.0, "duplicate": 0}
    assert [(q.protocol, q.pass_hat_k) for q in b.protocols] == [("s5.p1", 1.0)]


def test_validate_form_matches_the_stats_counts(tmp_path: Path) -> None:
    run = load_run(_run(tmp_path))
    protocol = Protocol.model_validate(PROTOCOL)
    a3 = [e for e in run.episodes if e.arm == "a3"]
    assert lifecycle_metrics(a3, {protocol.id: protocol}) == {
        "capture": {"passed": 3, "total": 4, "rate": 0.75},
        "recall": {"passed": 2, "total": 3, "rate": 0.6667},
        "duplicate": {"passed": 1, "total": 4, "rate": 0.25},
    }
    assert metric_counts(a3, {}) == {}
    assert protocol_step_metrics([protocol]) == {
        "s5.p1": {"captured": "capture", "recall": "recall", "dup": "duplicate"}
    }


def test_without_protocols_there_is_no_lifecycle(tmp_path: Path) -> None:
    eps = [episode("a", "t1", 0)]
    stats = compute_stats(
        load_run(write_run(tmp_path, eps, [grade(eps[0], True)], k=1)), resamples=0
    )
    assert stats.lifecycle == {}


def test_reports_show_the_lifecycle_table(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    files = write_reports(run_dir, resamples=50)
    stored = json.loads(files.stats_path.read_text(encoding="utf-8"))
    assert stored["lifecycle"]["a3"]["metrics"][0] == {
        "metric": "capture",
        "count": 3,
        "n": 4,
        "rate": 0.75,
    }
    md = files.markdown_path.read_text(encoding="utf-8")
    assert "## Lifecycle (S5)" in md and "## Lifecycle funnel (S5)" in md
    assert "| `a3` | capture rate | 75.0% | 3 / 4 |" in md
    assert "| `a3` | duplicate rate | 25.0% | 1 / 4 |" in md
    assert "| `a3` | `s5.p1` | 4 | 2 | 16.7% | 83.3% |" in md
    assert "| `b` | **mean over protocols** | | | 100.0% | |" in md
    html = files.html_path.read_text(encoding="utf-8")
    assert 'id="lifecycle-metrics"' in html
    assert "capture rate</td>" in html and "(3/4)" in html
