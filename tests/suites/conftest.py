"""Shared fixtures for the suite tests: one built world and one validation run per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from dabench.tasks.loader import TaskSet, load_builtin_tasks
from dabench.validation.tasks import ValidationReport, validate


@pytest.fixture(scope="session")
def suites_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """World 930 at scale 1 (the world the suites are validated on), built once."""
    from dabench.world import build_world

    out = tmp_path_factory.mktemp("suites-world") / "w930"
    build_world(930, 1, out)
    return out


@pytest.fixture(scope="session")
def builtin() -> TaskSet:
    """The shipped suites."""
    return load_builtin_tasks()


@pytest.fixture(scope="session")
def validation(
    suites_world: Path, builtin: TaskSet, tmp_path_factory: pytest.TempPathFactory
) -> ValidationReport:
    """`dabench tasks validate` over every shipped item, as CI's check runs it: each item on
    each of its arms among a0..a3 (one oracle run, a reference-platform process per arm)."""
    run_dir = tmp_path_factory.mktemp("validate") / "run"
    return validate(suites_world, builtin, run_dir=run_dir, progress=False)
