"""The semantic-layer stack installer's contract with .ci/run and the tests (fast: nothing is
installed): it imports on the standard library alone, its log says each step's outcome, and
pytest's workers put the semantic-layer file first."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.ordering import FIRST, LONGEST, files_first

from dabench.world.semantic_stack import STEPS, main, stack_paths, step_outcome

ROOT = Path(__file__).resolve().parents[2]


def test_the_installer_imports_only_the_standard_library() -> None:
    """.ci/run starts it on the system Python, before its venv exists."""
    code = (
        "import sys; import dabench.world.semantic_stack; "
        "top = {m.split('.')[0] for m in sys.modules} - {'__main__'}; "
        "print(sorted(top - set(sys.stdlib_module_names)))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "['dabench']"


def test_step_outcomes_are_read_from_the_log() -> None:
    log = (
        "semantic-stack: 12:00:00 semantic-venv started\n"
        "semantic-stack: 12:00:00 dbt-mcp-root started\n"
        "noise from a step\n"
        "semantic-stack: 12:01:40 semantic-venv done in 100s\n"
        "semantic-stack: 12:02:00 dbt-mcp-root FAILED after 120s: debootstrap trixie failed\n"
    )
    assert [step_outcome(log, s) for s in STEPS] == ["done", "FAILED", None]
    assert step_outcome("", STEPS[0]) is None


def test_stack_paths_and_usage(tmp_path: Path) -> None:
    paths = stack_paths(tmp_path)
    assert (paths.venv, paths.dbt_mcp) == (tmp_path / "semantic-venv", tmp_path / "dbt-mcp")
    assert main([]) == 2 and not any(tmp_path.iterdir())


@dataclass
class _Item:
    nodeid: str


def test_xdist_workers_hand_out_the_semantic_layer_file_first() -> None:
    """tests/conftest.py's order under a worker: the semantic-layer file, then the rest by
    test count (largest first, ties in collection order), each file's tests together."""
    ids = ["a.py::1", "b.py::1", "a.py::2", "c.py::1", "c.py::2", "c.py::3", "d.py::1",
           f"{FIRST[0]}::x", f"{FIRST[0]}::y"]  # fmt: skip
    items = [_Item(i) for i in ids]
    files_first(items)
    assert [i.nodeid for i in items] == [
        f"{FIRST[0]}::x", f"{FIRST[0]}::y", "c.py::1", "c.py::2", "c.py::3", "a.py::1",
        "a.py::2", "b.py::1", "d.py::1",
    ]  # fmt: skip


def test_the_longest_files_go_next_in_their_measured_order() -> None:
    """After the semantic-layer file come the files that took longest, in :data:`LONGEST`'s
    order whatever their test count, then the rest by test count."""
    ids = ["a.py::1", "a.py::2", "a.py::3", f"{LONGEST[1]}::x", f"{LONGEST[0]}::y",
           f"{LONGEST[1]}::z", f"{FIRST[0]}::w", "b.py::1"]  # fmt: skip
    items = [_Item(i) for i in ids]
    files_first(items)
    assert [i.nodeid for i in items] == [
        f"{FIRST[0]}::w", f"{LONGEST[0]}::y", f"{LONGEST[1]}::x", f"{LONGEST[1]}::z",
        "a.py::1", "a.py::2", "a.py::3", "b.py::1",
    ]  # fmt: skip


def test_every_listed_file_exists() -> None:
    """A renamed or removed test file does not stay in the order unnoticed."""
    root = Path(__file__).resolve().parents[2]
    assert [f for f in (*FIRST, *LONGEST) if not (root / f).is_file()] == []
