"""Building the run manifest: versions, git commit, world, task set, arms, times."""

from __future__ import annotations

import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dabench import __version__
from dabench.journal.records import RunManifest
from dabench.runner.experiment import Experiment


def git_commit() -> str | None:
    """The commit of the dabench source tree, when it is a git checkout (``+dirty`` when it
    has uncommitted changes)."""
    src = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True, timeout=5
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "."],
            cwd=src.parent,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def new_manifest(
    *,
    run_id: str,
    experiment: Experiment,
    world_hash: str,
    task_set_hash: str,
    task_ids: list[str],
    arms: list[dict[str, Any]],
    world_source: str | None = None,
    world_seed: int | None = None,
    world_scale: int | None = None,
    world_seed_random: bool = False,
) -> RunManifest:
    """A manifest for a run that starts now; ``world_seed``/``world_scale`` are those of the
    world the run serves (default: the experiment's ``world`` spec)."""
    return RunManifest(
        run_id=run_id,
        dabench_version=__version__,
        git_commit=git_commit(),
        python_version=platform.python_version(),
        experiment=experiment.model_dump(mode="json"),
        experiment_hash=experiment.hash(),
        world_seed=experiment.world.seed if world_seed is None else world_seed,
        world_scale=experiment.world.scale if world_scale is None else world_scale,
        world_seed_random=world_seed_random,
        world_hash=world_hash,
        world_source=world_source,
        task_set_hash=task_set_hash,
        task_ids=task_ids,
        k=experiment.k,
        arms=arms,
        judge=experiment.judge,
        no_model=not experiment.uses_model(),
        started_at=datetime.now(UTC),
    )
