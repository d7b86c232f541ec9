"""Mistakes on the command line end in one ``error:`` line and an exit code, never a
traceback, and leave nothing behind."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dabench.cli import main

from .conftest import DATA


def cli_error(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """Run ``dabench ARGV`` in-process; its exit code and its one ``error:`` line."""
    monkeypatch.setattr(sys, "argv", ["dabench", *argv])
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    errors = [ln for ln in (captured.err + captured.out).splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, captured
    assert "Traceback" not in captured.err
    code = exit_info.value.code
    assert isinstance(code, int)
    return code, errors[0]


UNKNOWN_SUITE = "error: --suite: unknown suite(s) s7; expected some of s1, s2, s3, s4, s5, s6"


@pytest.mark.parametrize(
    "argv",
    [
        ["tasks", "list", "--suite", "s7"],
        ["tasks", "validate", "--suite", "s7", "--margins"],
        ["play", "start", "--profile", "a0", "--suite", "s2,s7"],
        ["play", "--suite", "s7"],
        ["run", "--smoke", "--agent", "oracle", "--suite", "s7"],
    ],
)
def test_an_unknown_suite_is_one_error_everywhere(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    if argv[0] == "play":
        at = 2 if argv[1] == "start" else 1
        argv = [*argv[:at], "--run", str(tmp_path / "p"), *argv[at:]]
    assert cli_error(argv, monkeypatch, capsys) == (2, UNKNOWN_SUITE)
    assert list(tmp_path.iterdir()) == []  # nothing created


@pytest.mark.parametrize("step", ["next", "status", "finish"])
def test_a_play_step_on_a_directory_that_is_no_play_run_creates_nothing(
    step: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "runs" / "nonexist"
    code, error = cli_error(["play", step, "--run", str(run)], monkeypatch, capsys)
    assert code == 2 and f"{run}: not a play run (no play.json)" in error
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("existing", [False, True])
def test_a_failed_play_start_leaves_the_directory_as_it_was(
    existing: bool,
    tmp_path: Path,
    mini_world: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "p"
    if existing:
        run.mkdir()
        (run / "notes.txt").write_text("mine")
    argv = ["play", "start", "--run", str(run), "--profile", "a9", "--world", str(mini_world)]
    code, error = cli_error(argv, monkeypatch, capsys)
    assert code == 2 and "target.profile 'a9'" in error
    if existing:
        assert [p.name for p in run.iterdir()] == ["notes.txt"]
    else:
        assert not run.exists()


def test_a_run_whose_target_never_started_is_not_published(
    tmp_path: Path,
    mini_world: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    exp = tmp_path / "bad.yaml"
    exp.write_text(
        f"name: bad\nworld: {{dir: {mini_world}}}\n"
        f"tasks: {{builtin: false, files: [{DATA / 'tasks_basic.yaml'}]}}\n"
        "arms:\n- name: broken\n  target: {kind: mcp, name: broken, command: ['false']}\n"
        "  agent: {kind: oracle}\n"
    )
    run = tmp_path / "runs" / "bad"
    argv = ["run", str(exp), "--out", str(run), "--no-progress"]
    code, error = cli_error(argv, monkeypatch, capsys)
    assert code == 3 and "target mcp:broken did not start" in error
    assert (run / "manifest.json").is_file()  # the run keeps its files
    monkeypatch.setattr(sys, "argv", ["dabench", "publish", str(run), "--store", "duckdb:r.duckdb"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 0
    captured = capsys.readouterr()
    assert f"skipped {run}: no episodes" in captured.err
    assert "published" not in captured.out
    assert (run / "manifest.json").is_file()


ARM = "- name: a\n  target: {kind: reference, profile: a0}\n  agent: {kind: oracle}\n"


@pytest.mark.parametrize(
    ("change", "line", "expected"),
    [
        (("agent: {kind: oracle}", "agent: {kind: oracle, temprature: 0.1}"), 7,
         "arms[0].agent.temprature: Extra inputs are not permitted"),
        (("profile: a0", "profile: a7"), 6, "target.profile 'a7': profile"),
        (("target: {kind: reference, profile: a0}", 'target: {kind: mcp, command: ["${NOPE_X}"]}'),
         6, "environment variable NOPE_X is not set"),
        (("world: {dir: WORLD}", "world: {dir: nowhere}"), 2, "world.dir "),
        (("files: [TASKS]", "files: [TASKS, nope.yaml]"), 3, "tasks.files[1] "),
    ],
)  # fmt: skip
def test_experiment_errors_name_the_file_and_line(
    change: tuple[str, str],
    line: int,
    expected: str,
    tmp_path: Path,
    mini_world: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    text = (
        "name: e\nworld: {dir: WORLD}\ntasks: {builtin: false, files: [TASKS]}\narms:\n" + ARM
    ).replace(*change)
    exp = tmp_path / "e.yaml"
    exp.write_text(
        text.replace("WORLD", str(mini_world)).replace("TASKS", str(DATA / "tasks_basic.yaml"))
    )
    argv = ["run", str(exp), "--out", str(tmp_path / "run"), "--no-progress"]
    code, error = cli_error(argv, monkeypatch, capsys)
    assert code == 2
    assert error.startswith(f"error: {exp}:{line}: {expected}"), error
