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
        (("name: e", "name: " + "e" * 101), 1,
         "experiment field 'name': String should have at most 100 characters"),
        (("- name: a\n", "- name: a..\n"), 5,
         "experiment field 'arms.0.name': 'a..' is not a well-formed name: letters, digits"),
        (("- name: a\n", f"- name: {'a' * 101}\n"), 5,
         "experiment field 'arms.0.name': String should have at most 100 characters"),
        (("  agent: {kind: oracle}\n", "  agent: {kind: oracle}\n" + ARM), 8,
         "experiment field 'arms.1.name': arm name 'a' is already used at line 5"),
        (("arms:", 'k: "3"\narms:'), 4,
         "experiment field 'k': Input should be a valid integer, got '3'"),
        (("arms:", "k: true\narms:"), 4,
         "experiment field 'k': Input should be a valid integer, got True"),
        (("{dir: WORLD}", '{dir: WORLD, seed: "930"}'), 2,
         "experiment field 'world.seed': Input should be a valid integer, got '930'"),
        (("{dir: WORLD}", "{dir: WORLD, seed: 1.0}"), 2,
         "experiment field 'world.seed': Input should be a valid integer, got 1.0"),
        (("{dir: WORLD}", "{dir: WORLD, seed: -5}"), 2,
         "experiment field 'world.seed': Input should be greater than or equal to 0"),
        (("{dir: WORLD}", "{dir: WORLD, seed: 100000000000000000000}"), 2,
         "experiment field 'world.seed': Input should be less than or equal to 922337203685477"),
        (("files: [TASKS]}", "files: [TASKS], tasks: [t.nope]}"), 3,
         "tasks.tasks[0] 't.nope': no such task id in the experiment's tasks"),
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


ENDLESS_TASK = """\
tasks:
  - id: t.endless
    suite: s2
    category: single_tool
    difficulty: easy
    prompt: How many rows?
    grading:
      kind: numeric
      truth_sql: SELECT count(*) FROM range(10000000000000) a
"""


def test_a_truth_query_over_the_time_limit_names_the_task_and_writes_no_lock(
    tmp_path: Path,
    mini_world: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import dabench.tasks.engines

    monkeypatch.setattr(dabench.tasks.engines, "QUERY_TIMEOUT_S", 0)  # the query never ends
    tasks = tmp_path / "endless.yaml"
    tasks.write_text(ENDLESS_TASK)
    out = tmp_path / "lock.json"
    argv = ["tasks", "lock", "--world", str(mini_world), "--tasks", str(tasks), "--out", str(out)]
    code, error = cli_error(argv, monkeypatch, capsys)
    assert code == 2
    assert error.startswith(
        f"error: {tasks}:2: task 't.endless': truth SQL took longer than 0 s on the world"
    ), error
    assert not out.exists()


def test_ctrl_c_interrupts_a_running_truth_query(mini_world: Path) -> None:
    import signal
    import threading

    from dabench.interruptible import bounded
    from dabench.world.source import open_world

    con = open_world(mini_world).connect()
    main_thread = threading.get_ident()

    def ctrl_c_then_endless() -> object:  # Ctrl-C arrives while the query runs
        signal.pthread_kill(main_thread, signal.SIGINT)
        return con.execute("SELECT count(*) FROM range(10000000000000) a").fetchall()

    # a pytest-xdist worker ignores SIGINT: give this test the interpreter's own handler
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):  # a safety limit, never reached when it works
            bounded(ctrl_c_then_endless, con.interrupt, timeout_s=600)
        assert con.execute("SELECT 42").fetchall() == [(42,)]  # the connection is free again
    finally:
        signal.signal(signal.SIGINT, previous)
        con.close()


@pytest.fixture(scope="module")
def oracle_run(mini_world: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished oracle run of the basic tasks on the mini world (arm a0)."""
    import subprocess

    root = tmp_path_factory.mktemp("oracle-run")
    exp = root / "e.yaml"
    exp.write_text(
        f"name: e\nworld: {{dir: {mini_world}}}\n"
        f"tasks: {{builtin: false, files: [{DATA / 'tasks_basic.yaml'}]}}\narms:\n{ARM}"
    )
    run = root / "run"
    argv = [sys.executable, "-m", "dabench.cli", "run", str(exp), "--out", str(run)]
    subprocess.run([*argv, "--no-progress"], cwd=root, capture_output=True, check=True)
    return run


@pytest.mark.parametrize("command", [["report"], ["grade"], ["run", "--resume"]])
def test_a_read_only_run_directory_is_one_error_line(
    command: list[str], oracle_run: Path, tmp_path: Path
) -> None:
    import shutil
    import subprocess

    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount the run directory read-only")
    copy = tmp_path / "run"
    shutil.copytree(oracle_run, copy)
    before = {p.name: p.read_bytes() for p in copy.iterdir() if p.is_file()}
    mount_read_only = (
        'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" || exit 99; exec "$@"'
    )
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", mount_read_only, str(copy),
         sys.executable, "-m", "dabench.cli", *command, str(copy)],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    if done.returncode == 99 or "unshare failed" in done.stderr:
        pytest.skip("cannot mount read-only here (needs root or user namespaces)")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: cannot write {copy}/"), done.stderr
    assert errors[0].endswith(": read-only file system")
    assert {p.name: p.read_bytes() for p in copy.iterdir() if p.is_file()} == before


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "--smoke", "--arms", ","], "error: --arms ',': empty; expected arm names"),
        (["run", "--smoke", "--suite", ""], "error: --suite '': empty; expected suites"),
        (["tasks", "list", "--suite", "s1,"],
         "error: --suite 's1,': an empty item in the list; expected suites"),
        (["plan", "--rates", "0.5,,0.5"],
         "error: --rates '0.5,,0.5': an empty item in the list; expected pass rates"),
        (["plan", "--rates", "0.5", "--price-model", "nocolon"],
         "error: --price-model nocolon: prices the tokens of --baseline-run RUN"),
        (["run", "--smoke", "--out", "a-file"],
         "error: --out a-file: exists and is not a directory"),
        (["run", "--smoke", "--out", "loop"], "error: --out loop: exists and is not a directory"),
    ],
)  # fmt: skip
def test_flag_values_that_select_nothing_or_cannot_be_used_are_refused(
    argv: list[str],
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("mine")
    (tmp_path / "loop").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop")
    code, error = cli_error(argv, monkeypatch, capsys)
    assert code == 2 and error.startswith(expected), error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "loop", "loop2"]
    assert (tmp_path / "a-file").read_text() == "mine"


@pytest.mark.parametrize("command", ["list", "lock"])
def test_an_empty_task_file_is_refused(
    command: str,
    tmp_path: Path,
    mini_world: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = tmp_path / "empty.yaml"
    tasks.write_text("tasks: []\n")
    out = tmp_path / "lock.json"
    argv = ["tasks", command, "--tasks", str(tasks)]
    if command == "lock":
        argv += ["--world", str(mini_world), "--out", str(out)]
    assert cli_error(argv, monkeypatch, capsys) == (2, f"error: {tasks}:1: no tasks in this file")
    assert not out.exists()


def test_the_truth_time_limit_is_set_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``DABENCH_TRUTH_TIMEOUT_S`` sets the limit (a large-scale world's truths take longer);
    anything but a positive number is an error naming the variable."""
    from dabench.errors import UserInputError
    from dabench.tasks.engines import QUERY_TIMEOUT_S, query_timeout_s

    monkeypatch.delenv("DABENCH_TRUTH_TIMEOUT_S", raising=False)
    assert query_timeout_s() == QUERY_TIMEOUT_S
    monkeypatch.setenv("DABENCH_TRUTH_TIMEOUT_S", "600")
    assert query_timeout_s() == 600.0
    for bad in ("0", "-5", "nan", "soon"):
        monkeypatch.setenv("DABENCH_TRUTH_TIMEOUT_S", bad)
        with pytest.raises(UserInputError, match="DABENCH_TRUTH_TIMEOUT_S"):
            query_timeout_s()
