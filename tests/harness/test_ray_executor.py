"""The Ray executor against a real two-node Ray cluster on loopback (``ray start --head`` plus a
node joined with ``ray start --address``, each with its own raylet), with the fake provider.

The nodes build the world from its seed into their own cache (not the driver's). One test
checks the cluster-wide provider limit from the journal's episode intervals; another kills
the second node mid-run and checks the run still holds exactly one episode per key, with no
harness errors, graded exactly like a local run of the same experiment; the last runs an
inline external world (each node resolves and fingerprints it itself).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from tests.environment import skip_unless_ci

import dabench
from dabench.grading import grade_run
from dabench.journal.records import Episode
from dabench.journal.store import Journal
from dabench.runner.experiment import Experiment
from dabench.runner.run import ExperimentRun

from .conftest import DATA
from .ray_cluster import RayCluster

pytestmark = pytest.mark.slow

FAKE = "fake:latency=300ms,calls=2"
FAKE_SLOW = "fake:latency=1s,calls=2"
"""The node-loss test's model: episodes long enough that the second node still holds some in
flight when it is killed, however fast the machine drains the queue."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    """Head plus a second node on 127.0.0.1, torn down after the module."""
    try:
        import ray  # noqa: F401
    except ImportError:
        skip_unless_ci("ray is not installed (pip install 'dabench[ray]')")
    src = str(Path(dabench.__file__).resolve().parents[1])
    node_cache = tmp_path_factory.mktemp("node-cache")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]),
        "DABENCH_CACHE": str(node_cache),
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",  # loopback only; a real cluster shares its token
        # The GCS declares a killed node dead after 5 failed health checks: 1 s apart here
        # (default 3 s), so the node-loss test waits a third as long for it, with the whole
        # cluster spinning meanwhile. A live raylet answers well within the 10 s check timeout.
        "RAY_health_check_period_ms": "1000",
    }
    c = RayCluster(env, cpus=1)
    c.node_cache = node_cache  # type: ignore[attr-defined]
    try:
        c.start_head()
        c.add_node()
        yield c
    finally:
        c.stop()


@pytest.fixture
def driver_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The driver's own world cache (the nodes never see it)."""
    cache = tmp_path / "driver-cache"
    monkeypatch.setenv("DABENCH_CACHE", str(cache))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    return cache


def experiment(tmp_path: Path, model: str = FAKE, **extra: object) -> Path:
    data = {
        "name": "ray",
        "world": {"seed": 930, "scale": 1},
        "tasks": {"builtin": False, "files": [str(DATA / "tasks_w930.yaml")]},
        "k": 4,
        "concurrency": 2,
        "arms": [
            {"name": "oracle", "target": {"kind": "reference", "profile": "a0"},
             "agent": {"kind": "oracle"}},
            {"name": "fake", "target": {"kind": "reference", "profile": "a2"},
             "agent": {"kind": "llm", "model": model}},
        ],
        **extra,
    }  # fmt: skip
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def max_overlap(episodes: list[Episode]) -> int:
    """Most episodes playing at once, from their journal intervals."""
    edges = sorted(
        [(e.started_at.timestamp(), 1) for e in episodes]
        + [(e.finished_at.timestamp(), -1) for e in episodes]
    )
    now = best = 0
    for _, step in edges:
        now += step
        best = max(best, now)
    return best


async def test_cluster_wide_provider_limit(
    cluster: RayCluster, tmp_path: Path, driver_cache: Path
) -> None:
    path = experiment(tmp_path, provider_concurrency={"fake": 2}, arms=[
        {"name": "fake", "target": {"kind": "reference", "profile": "a0"},
         "agent": {"kind": "llm", "model": FAKE}},
    ])  # fmt: skip
    exp = Experiment.model_validate(yaml.safe_load(path.read_text()))
    run = ExperimentRun(
        exp, tmp_path / "run", experiment_dir=tmp_path, console=Console(stderr=True),
        progress=False, executor="ray", ray_address=cluster.address,
    )  # fmt: skip
    summary = await run.execute()
    episodes = Journal(tmp_path / "run").load()
    assert len(episodes) == 12 and summary.statuses == Counter(completed=12)
    assert len(summary.per_node) == 2, summary.per_node  # both nodes played (4 slots in all)
    limits = summary.provider_limits["fake"]
    assert limits["limit"] == 2 and limits["granted"] == 12
    assert limits["high_water"] == 2  # reached, never exceeded
    assert max_overlap(episodes) <= 2  # from the journal, not the limiter's own count
    # --resume works whichever executor the earlier run used: drop 3 episodes, resume locally
    lines = (tmp_path / "run" / "episodes.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "run" / "episodes.jsonl").write_text("".join(lines[:-3]))
    resumed = ExperimentRun(
        exp, tmp_path / "run", experiment_dir=tmp_path, console=Console(stderr=True),
        progress=False, resume=True, executor="local",
    )  # fmt: skip
    again = await resumed.execute()
    assert again.already_done == 9 and again.finished == 3
    assert Counter(Counter(e.key for e in Journal(tmp_path / "run").load()).values()) == {1: 12}
    # the nodes built the world from its seed into their own cache
    assert list((cluster.node_cache / "worlds").glob("world-*seed930-scale1"))  # type: ignore[attr-defined]


def test_node_loss_requeues_and_matches_local(
    cluster: RayCluster, tmp_path: Path, driver_cache: Path
) -> None:
    path = experiment(tmp_path, model=FAKE_SLOW)
    ray_run, local_run = tmp_path / "ray-run", tmp_path / "local-run"
    cmd = [sys.executable, "-m", "dabench.cli", "run", str(path), "--no-progress", "--no-grade"]
    env = {**os.environ, "PYTHONPATH": cluster.env["PYTHONPATH"]}
    proc = subprocess.Popen(
        [*cmd, "--out", str(ray_run), "--executor", "ray", "--ray-address", cluster.address],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    journal = ray_run / "episodes.jsonl"
    # Kill the second node once it has played an episode (so it holds more in flight): on a
    # loaded machine the head may take every early episode, and a count alone would then kill
    # an idle node.
    deadline = time.monotonic() + 300
    nodes: set[str] = set()
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists():
            text = journal.read_text()
            complete = text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]
            nodes = {json.loads(line)["node"] for line in complete}
            if len(nodes) == 2:
                break
        time.sleep(0.05)
    assert proc.poll() is None and len(nodes) == 2, (nodes, proc.communicate()[0])
    cluster.kill(cluster.nodes[1])  # the second node: its raylet, workers and platforms
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    requeued = re.search(r"re-queued after a\s+lost\s+node:\s+(\d+)", out)
    assert requeued is not None and int(requeued.group(1)) >= 1, out  # it had some in flight
    episodes = Journal(ray_run).load()
    keys = Counter(e.key for e in episodes)
    assert len(keys) == 24 and set(keys.values()) == {1}, keys
    assert {e.status for e in episodes} == {"completed"}

    # The same experiment locally, more episodes at once (the model's 1 s waits overlap; how
    # many run at once changes no answer and no grade).
    local = subprocess.run(
        [*cmd, "--out", str(local_run), "--concurrency", "8"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert local.returncode == 0, local.stdout + local.stderr
    on_ray = {g.key: g.passed for g in grade_run(ray_run)}
    on_local = {g.key: g.passed for g in grade_run(local_run)}
    assert on_ray == on_local
    assert sum(on_ray.values()) >= 12  # the oracle arm passes: the comparison is not vacuous


async def test_an_external_world_runs_on_the_cluster(
    cluster: RayCluster, tmp_path: Path, driver_cache: Path
) -> None:
    """An inline external world (a DuckDB file and a knowledge directory made by ``world
    init``): each node writes its ``world.yaml`` into its own cache, fingerprints the data
    itself and serves it; the oracle's episodes pass."""
    import duckdb

    from dabench.world.init import init_world

    warehouse = tmp_path / "data.duckdb"
    con = duckdb.connect(str(warehouse))
    con.execute("CREATE SCHEMA shop")
    con.execute("CREATE TABLE shop.orders AS SELECT i AS order_id, i * 100 AS amount "
                "FROM range(1, 41) t(i)")  # fmt: skip
    con.close()
    init_world(str(warehouse), tmp_path / "knowledge")
    tasks = [
        {"id": "x.orders", "suite": "s2", "category": "single_tool", "difficulty": "easy",
         "prompt": "How many orders are there?",
         "grading": {"kind": "numeric", "truth_sql": "SELECT count(*) FROM shop.orders"}},
        {"id": "x.amount", "suite": "s2", "category": "single_tool", "difficulty": "easy",
         "prompt": "What is the total order amount?",
         "grading": {"kind": "numeric", "truth_sql": "SELECT sum(amount) FROM shop.orders"}},
    ]  # fmt: skip
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump({"tasks": tasks}))
    path = experiment(
        tmp_path,
        world={"kind": "warehouse", "engine": "duckdb", "location": "data.duckdb",
               "knowledge": "knowledge"},
        tasks={"builtin": False, "files": ["tasks.yaml"]},
        k=1,
        arms=[{"name": "oracle", "target": {"kind": "reference", "profile": "a0"},
               "agent": {"kind": "oracle"}}],
    )  # fmt: skip
    exp = Experiment.model_validate(yaml.safe_load(path.read_text()))
    run = ExperimentRun(
        exp, tmp_path / "run", experiment_dir=tmp_path, console=Console(stderr=True),
        progress=False, executor="ray", ray_address=cluster.address,
    )  # fmt: skip
    summary = await run.execute()
    assert summary.statuses == Counter(completed=2), summary.harness_errors
    from dabench.grading.run import agrade_run

    grades = await agrade_run(tmp_path / "run")
    assert len(grades) == 2 and all(g.passed for g in grades)
    assert list((cluster.node_cache / "external-worlds").glob("*/world.yaml"))  # type: ignore[attr-defined]
