"""Shared fixtures: one built world, one real platform process per profile."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from platform_helpers import (
    ADMIN_KEY,
    KEYS,
    TIGHT_PROFILE,
    RunningPlatform,
    launch_platform,
    stop_platforms,
    wait_healthy,
)

from dabench.platform.warehouse import DuckDBWarehouse, WarehouseLimits
from dabench.world import World, build_world, load_world


@pytest.fixture(scope="session")
def world_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """World 930 at scale 1, built once per test session."""
    out = tmp_path_factory.mktemp("world") / "w930"
    build_world(930, 1, out)
    return out


@pytest.fixture(scope="session")
def world(world_dir: Path) -> World:
    """The loaded world (catalog, pages, manifest)."""
    return load_world(world_dir)


@pytest.fixture(scope="session")
def auth_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An --auth file: teacher and learner analysts, a reviewer, one admin key."""
    path = tmp_path_factory.mktemp("auth") / "auth.yaml"
    identities = [
        {"key": key, "user": user, "persona": "reviewer" if user == "reviewer" else "analyst"}
        for user, key in KEYS.items()
    ]
    path.write_text(yaml.safe_dump({"identities": identities, "admin_keys": [ADMIN_KEY]}))
    return path


class PlatformPool:
    """Launches each standard platform on its first use (a pytest worker starts only the
    profiles its files need: a start is about 2.7 s of CPU), stops them together."""

    def __init__(self, specs: dict[str, str], world_dir: Path, auth: Path, tmp: Path) -> None:
        self.specs = specs
        self.world_dir = world_dir
        self.auth = auth
        self.tmp = tmp
        self.running: dict[str, RunningPlatform] = {}

    def get(self, name: str) -> RunningPlatform:
        """The healthy platform ``name``, launched on first use."""
        if name not in self.running:
            state = self.tmp / f"state-{name}"
            platform = launch_platform(self.world_dir, self.specs[name], self.auth, state)
            self.running[name] = platform
            wait_healthy(platform)
        return self.running[name]

    def stop(self) -> None:
        """Stop every launched platform."""
        stop_platforms(list(self.running.values()))


@pytest.fixture(scope="session")
def platform_pool(
    world_dir: Path, auth_file: Path, tight_profile: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PlatformPool]:
    """a0..a3 and the tight profile, each one real server process."""
    specs = {"a0": "a0", "a1": "a1", "a2": "a2", "a3": "a3", "tight": str(tight_profile)}
    pool = PlatformPool(specs, world_dir, auth_file, tmp_path_factory.mktemp("platforms"))
    yield pool
    pool.stop()


def _platform_fixture(name: str) -> Any:
    @pytest.fixture(scope="session")
    def fixture(platform_pool: PlatformPool) -> RunningPlatform:
        return platform_pool.get(name)

    return fixture


platform_a0 = _platform_fixture("a0")
platform_a1 = _platform_fixture("a1")
platform_a2 = _platform_fixture("a2")
platform_a3 = _platform_fixture("a3")
platform_tight = _platform_fixture("tight")


@pytest.fixture(scope="session")
def tight_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user-written profile file."""
    path = tmp_path_factory.mktemp("profiles") / "tight.yaml"
    path.write_text(yaml.safe_dump(TIGHT_PROFILE))
    return path


@pytest.fixture()
def one_worker(world_dir: Path) -> Iterator[DuckDBWarehouse]:
    """A warehouse with one worker process of 512 MiB."""
    warehouse = DuckDBWarehouse(
        world_dir / "warehouse.duckdb", 1, WarehouseLimits(memory_limit="512MiB", workers=1)
    )
    yield warehouse
    warehouse.close()
