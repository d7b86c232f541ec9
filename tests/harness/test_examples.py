"""The shipped examples stay valid: every experiment loads, every referenced profile parses."""

from __future__ import annotations

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


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_example_profile_parses(path: Path) -> None:
    profile = load_profile(str(path))
    assert profile.name == path.stem
    assert profile.search.ranking != "bm25"  # the examples exist to show the other rankings
