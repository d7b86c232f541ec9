"""Shared fixtures: one synthetic run per session (expensive to generate)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dabench.stats.synthetic import SyntheticSpec, write_synthetic_run


@pytest.fixture(scope="session")
def synthetic_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-arm synthetic run: 60 tasks, k = 3 (a2 much stronger than a0)."""
    return write_synthetic_run(tmp_path_factory.mktemp("syn") / "run", SyntheticSpec(tasks=60))
