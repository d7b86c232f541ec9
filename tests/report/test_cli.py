"""``dabench report``, ``dabench compare`` and ``dabench history`` through the real CLI entry."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from dabench.cli import main
from dabench.report.build import ReportFiles
from dabench.stats.synthetic import SyntheticArm, SyntheticSpec, write_synthetic_run


def run_cli(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    monkeypatch.setattr(sys, "argv", ["dabench", *args])
    try:
        main()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def test_report_command_writes_the_three_files(
    reported_run: tuple[Path, ReportFiles],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_dir, _ = reported_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("report.*", "stats.json"))
    code = run_cli(monkeypatch, "report", str(copy), "--resamples", "200", "--baseline-arm", "a1")
    out = capsys.readouterr().out
    assert code == 0
    assert {"stats.json", "report.md", "report.html"} <= {p.name for p in copy.iterdir()}
    assert "a2" in out and "wrote" in out
    assert "baseline arm `a1`" in (copy / "report.md").read_text(encoding="utf-8")


def test_report_errors_exit_2_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(monkeypatch, "report", str(tmp_path / "missing")) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "not a directory" in err


def test_compare_exit_codes(
    reported_run: tuple[Path, ReportFiles],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_dir, _ = reported_run
    assert run_cli(monkeypatch, "compare", str(run_dir), "--baseline", str(run_dir)) == 0
    assert "no regression" in capsys.readouterr().out
    degraded = write_synthetic_run(
        tmp_path / "bad",
        SyntheticSpec(
            arms=[
                SyntheticArm("a0", 0.2, "a0", mean_calls=9.0),
                SyntheticArm("a1", 0.8, "a1", mean_calls=7.0),
                SyntheticArm("a2", -0.5, "a2-off", mean_calls=12.0),
            ],
            tasks=36,
            k=3,
            run_id="degraded",
        ),
    )
    out_json = tmp_path / "gate.json"
    code = run_cli(
        monkeypatch, "compare", str(degraded), "--baseline", str(run_dir), "--json", str(out_json)
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "REGRESSION" in out and "a2 / overall: accuracy dropped" in out
    assert '"regressed": true' in out_json.read_text(encoding="utf-8")
    other = write_synthetic_run(tmp_path / "other", SyntheticSpec(tasks=12, run_id="o"))
    assert run_cli(monkeypatch, "compare", str(other), "--baseline", str(run_dir)) == 2
    err = capsys.readouterr().err
    assert "refusing to compare" in err and "--force" in err


def test_history_lists_runs_with_headline_numbers(
    reported_run: tuple[Path, ReportFiles],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_dir, files = reported_run
    shutil.copytree(run_dir, tmp_path / "runs" / "r1")
    write_synthetic_run(tmp_path / "runs" / "nested" / "r2", SyntheticSpec(tasks=6, run_id="r2"))
    (tmp_path / "runs" / "junk").mkdir()
    assert run_cli(monkeypatch, "history", str(tmp_path / "runs")) == 0
    out = capsys.readouterr().out
    assert "report-fixture" in out and "r2" in out
    acc = files.stats.group("a2", "overall")
    assert acc is not None and acc.accuracy.estimate is not None
    assert f"{100 * acc.accuracy.estimate:.1f}%" in out
