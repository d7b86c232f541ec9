"""The shipped examples stay valid: every experiment loads, every referenced profile parses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dabench.platform.profile import load_profile
from dabench.runner.experiment import load_experiment

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml")) + sorted(
    (ROOT / "examples" / "targets").glob("*.yaml")
)
PROFILES = sorted((ROOT / "examples" / "profiles").glob("*.yaml"))


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 2 and len(PROFILES) >= 2


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_experiment_loads(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # profile paths in examples are relative to the repository root
    exp = load_experiment(path)
    assert exp.arms
    for arm in exp.arms:
        if arm.target.get("kind") == "reference":
            profile = load_profile(str(arm.target["profile"]))
            assert profile.name


WORLDS = [
    p for p in [*EXAMPLES, ROOT / "examples" / "flights" / "probe.yaml"] if "dir:" in p.read_text()
]


def _set_up_paths(path: Path) -> set[Path]:
    """The folders the example's set-up comments build or export from (``--out X``,
    ``--world X``, run from the repository root; else docs/targets.md's ``worlds/w930``); the
    flights example's world sits beside it."""
    if path.parent.name == "flights":
        return {path.parent / "world"}  # docs/own-data.md, step 7
    comments = "\n".join(ln for ln in path.read_text().splitlines() if ln.lstrip().startswith("#"))
    named = re.findall(r"--(?:out|world) (worlds/[\w.-]+)", comments)
    return {ROOT / m for m in named} or {ROOT / "worlds" / "w930"}  # docs/targets.md set-up


@pytest.mark.parametrize("path", WORLDS, ids=lambda p: p.name)
def test_example_world_dir_is_where_its_set_up_puts_it(path: Path) -> None:
    exp = load_experiment(path)
    assert exp.world.dir is not None
    where = (path.parent / exp.world.dir).resolve()
    assert where in _set_up_paths(path), f"{path.name}: world.dir resolves to {where}"


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_example_profile_parses(path: Path) -> None:
    profile = load_profile(str(path))
    assert profile.name == path.stem
    assert profile.search.ranking != "bm25"  # the examples exist to show the other rankings
