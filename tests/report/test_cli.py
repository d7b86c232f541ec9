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
    header = next(ln for ln in out.splitlines() if " arm " in ln and " suite " in ln)
    cells = [c.strip() for c in header.strip("┃ ").split("┃")]
    assert cells[-1] == "verdict" and all(cells), cells  # every column has a header
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


def test_report_on_a_run_without_episodes_is_an_error(
    reported_run: tuple[Path, ReportFiles],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_dir, _ = reported_run
    half = tmp_path / "half"
    half.mkdir()
    shutil.copy(run_dir / "manifest.json", half / "manifest.json")  # stopped before episode 1
    assert run_cli(monkeypatch, "report", str(half)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "no episodes in its journal" in err
    assert not (half / "report.html").exists()
    (tmp_path / "empty").mkdir()
    assert run_cli(monkeypatch, "report", str(tmp_path / "empty")) != 0
    assert "no manifest" in capsys.readouterr().err


def test_publish_skips_what_is_not_a_run(
    reported_run: tuple[Path, ReportFiles],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_dir, _ = reported_run
    runs = tmp_path / "runs"
    shutil.copytree(run_dir, runs / "r1")
    store = f"duckdb:{runs / 'results.duckdb'}"
    for _ in range(2):  # the second time, runs/* holds the store file too (the README's loop)
        entries = sorted(str(p) for p in runs.iterdir())
        assert run_cli(monkeypatch, "publish", *entries, "--store", store) == 0
        out, err = capsys.readouterr()
        assert "published report-fixture" in out
    assert f"skipped {runs / 'results.duckdb'}: not a run directory (no manifest.json)" in err
    assert run_cli(monkeypatch, "publish", str(runs / "results.duckdb"), "--store", store) == 2
    assert "nothing to publish" in capsys.readouterr().err


def test_grade_refuses_a_directory_without_a_manifest_and_touches_nothing(
    reported_run: tuple[Path, ReportFiles],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_dir, _ = reported_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("manifest.json"))
    before = {p.name: p.read_bytes() for p in copy.iterdir() if p.is_file()}
    for target in (copy, tmp_path / "missing"):
        assert run_cli(monkeypatch, "grade", str(target)) == 2
        err = capsys.readouterr().err
        assert err == f"error: {target}: not a run directory (no manifest.json)\n"
    assert {p.name: p.read_bytes() for p in copy.iterdir() if p.is_file()} == before


def test_a_manifest_from_a_newer_dabench_says_so(
    reported_run: tuple[Path, ReportFiles],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    run_dir, _ = reported_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    manifest = copy / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "schema_version": 7}))
    assert run_cli(monkeypatch, "report", str(copy)) == 2
    assert capsys.readouterr().err == (
        f"error: {manifest}: written by a newer dabench (schema_version 7); upgrade dabench to "
        "read this manifest\n"
    )


@pytest.mark.parametrize("command", ["report", "publish"])
def test_a_torn_journal_line_is_one_warning_on_stderr(
    command: str,
    reported_run: tuple[Path, ReportFiles],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_dir, _ = reported_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("report.*", "stats.json"))
    journal = copy / "episodes.jsonl"
    lines = journal.read_bytes().count(b"\n")
    with journal.open("ab") as fh:
        fh.write(b'{"key": "cut short')  # a process killed mid-write
    extra = ["--store", f"duckdb:{tmp_path / 'r.duckdb'}"] if command == "publish" else []
    assert run_cli(monkeypatch, command, str(copy), *extra) == 0
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("warning:")]
    assert warnings == [
        f"warning: {copy}: episodes.jsonl line {lines + 1} is torn (no terminating newline) "
        "and was skipped"
    ]
