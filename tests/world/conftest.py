"""Shared fixtures: one seed-930 scale-1 world built per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from dabench.world import World, build_world, load_world

SEED = 930


@pytest.fixture(scope="session")
def world_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A freshly built world (seed 930, scale 1)."""
    out = tmp_path_factory.mktemp("world") / "w930"
    build_world(SEED, 1, out)
    return out


@pytest.fixture(scope="session")
def world(world_dir: Path) -> World:
    """The session world, loaded and verified."""
    return load_world(world_dir, verify=True)
