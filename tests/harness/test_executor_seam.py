"""The executor seam without a cluster: the experiment's ``executor`` field, the world check a
Ray node makes before it serves, and the episode code both executors share."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from dabench.errors import HarnessError
from dabench.runner import episode, run
from dabench.runner.experiment import Experiment

ARM = {"name": "a0", "target": {"kind": "reference"}, "agent": {"kind": "oracle"}}


def test_executor_field_and_hash() -> None:
    local = Experiment.model_validate({"name": "x", "arms": [ARM]})
    on_ray = Experiment.model_validate(
        {"name": "x", "arms": [ARM], "executor": "ray", "ray": {"node_concurrency": 3}}
    )
    assert local.executor == "local" and on_ray.ray.node_concurrency == 3
    assert local.hash() == on_ray.hash()  # where it runs does not change what it measures
    with pytest.raises(ValidationError, match="executor"):
        Experiment.model_validate({"name": "x", "arms": [ARM], "executor": "slurm"})


def test_one_episode_function() -> None:
    """The local executor has no episode code of its own: it calls the shared run_job."""
    source = Path(run.__file__).read_text()
    assert "run_job(" in source and "async def _play" not in source
    assert run.PlayedEpisode is episode.PlayedEpisode


def test_node_world_refuses_another_hash(tmp_path: Path, mini_world: Path) -> None:
    pytest.importorskip("ray")
    from dabench.runner.ray_executor import node_world

    exp = Experiment.model_validate({"name": "x", "arms": [ARM], "world": {"dir": str(mini_world)}})
    assert node_world(exp, tmp_path, "mini-40") == mini_world
    with pytest.raises(HarnessError, match="differs from the driver's"):
        node_world(exp, tmp_path, "f" * 64)


def test_node_world_builds_from_the_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A world.dir the node does not have: the node builds the seed's world into its own
    cache, and serves it only when its hash is the driver's."""
    pytest.importorskip("ray")
    from dabench.runner.ray_executor import node_world
    from dabench.tasks.lock import read_world_manifest

    monkeypatch.setenv("DABENCH_CACHE", str(tmp_path / "node-cache"))
    exp = Experiment.model_validate(
        {"name": "x", "arms": [ARM], "world": {"seed": 930, "dir": str(tmp_path / "absent")}}
    )
    with pytest.raises(HarnessError, match="differs from the driver's"):
        node_world(exp, tmp_path, "f" * 64)
    built = next((tmp_path / "node-cache" / "worlds").glob("world-*seed930-scale1"))
    real = read_world_manifest(built).world_hash
    assert node_world(exp, tmp_path, real) == built
