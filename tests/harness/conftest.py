"""Shared fixtures of the harness tests: a mini world, the npm MCP test server, the real world."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from datetime import date
from pathlib import Path

import duckdb
import pytest
from tests.environment import skip_unless_ci

from dabench.targets.base import Target, TargetContext
from dabench.targets.registry import make_target
from dabench.world.files import sha256_file
from dabench.world.model import Catalog, ColumnMeta, DatasetMeta, WorldManifest
from dabench.world.policy_data import dump_policies

DATA = Path(__file__).parent / "data"
EVERYTHING_PKG = "@modelcontextprotocol/server-everything"
ORDER_COLUMNS = [("order_id", "BIGINT"), ("amount_cents", "BIGINT")]


def _dataset(ds_id: str, kind: str, columns: list[tuple[str, str]], rows: int) -> DatasetMeta:
    return DatasetMeta(
        id=ds_id,
        domain=ds_id.split(".")[0],
        kind=kind,  # type: ignore[arg-type]
        title=ds_id,
        description=f"test dataset {ds_id}",
        owner="tests",
        columns=[ColumnMeta(name=n, type=t, description=n) for n, t in columns],
        row_count=rows,
        last_loaded=date(2025, 12, 31),
    )


def build_mini_world(root: Path, *, orders: int = 40) -> Path:
    """A tiny world directory with the files the harness reads (not a platform world)."""
    root.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(root / "warehouse.duckdb"))
    con.execute("CREATE SCHEMA sales; CREATE SCHEMA legacy")
    con.execute(
        "CREATE TABLE sales.orders AS SELECT range AS order_id, (range * 137) % 9000 + 100 "
        f"AS amount_cents FROM range({orders})"
    )
    con.execute("CREATE TABLE legacy.orders_old AS SELECT * FROM sales.orders LIMIT 5")
    con.close()
    catalog = Catalog(
        datasets=[
            _dataset("sales.orders", "fact", ORDER_COLUMNS, orders),
            _dataset("legacy.orders_old", "legacy", [("order_id", "BIGINT")], 5),
        ],
        glossary=[],
        curated_queries=[],
        lineage=[],
    )
    (root / "catalog.json").write_text(catalog.model_dump_json(indent=2))
    (root / "policies.yaml").write_text(dump_policies([]))  # a world without policies
    manifest = WorldManifest(
        generator_version="test",
        seed=1,
        scale=1,
        files={},
        world_hash=f"mini-{orders}",
        traps=[],
        table_rows={"sales.orders": orders},
        policies_sha256=sha256_file(root / "policies.yaml"),
    )
    (root / "world.json").write_text(manifest.model_dump_json(indent=2))
    return root


@pytest.fixture(scope="session")
def mini_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny world (sales.orders, legacy.orders_old) for loader, lock and runner tests."""
    return build_mini_world(tmp_path_factory.mktemp("mini") / "world")


@pytest.fixture(scope="session")
def everything_server() -> list[str]:
    """The command of ``@modelcontextprotocol/server-everything`` (stdio), installed with npm
    into the dabench cache once; skipped with the reason when npm cannot install it."""
    npm = shutil.which("npm")
    if npm is None:
        skip_unless_ci("npm is not installed: cannot install " + EVERYTHING_PKG)
    cache = Path(os.environ.get("DABENCH_CACHE", Path.home() / ".cache" / "dabench")) / "npm"
    binary = cache / "node_modules" / ".bin" / "mcp-server-everything"
    cache.mkdir(parents=True, exist_ok=True)
    # One installer at a time: parallel test workers (pytest -n) share the cache.
    with (cache / ".everything.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            proc = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(cache), EVERYTHING_PKG],
                capture_output=True,
                text=True,
                timeout=300,
            )
            if proc.returncode != 0 or not binary.exists():
                skip_unless_ci(f"npm could not install {EVERYTHING_PKG}: {proc.stderr[-500:]}")
    return [str(binary), "stdio"]


@pytest.fixture
async def everything_target(tmp_path: Path, everything_server: list[str]) -> AsyncIterator[Target]:
    """A started stdio ``mcp`` target on server-everything, stopped after the test."""
    target = make_target(
        {"kind": "mcp", "command": everything_server}, TargetContext(None, tmp_path)
    )
    await target.start()
    try:
        yield target
    finally:
        await target.stop()


@pytest.fixture(scope="session")
def real_world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """World 930 at scale 1 (the smoke experiment's world), built once per session."""
    from dabench.world import build_world

    out = tmp_path_factory.mktemp("world") / "w930"
    build_world(930, 1, out)
    return out


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    """A play run directory whose detached platform is stopped after the test, whatever
    happened (the ``dabench play`` tests)."""
    from dabench.play.state import read_state
    from dabench.targets.process import pid_alive, stop_pid

    path = tmp_path / "play"
    yield path
    if (path / "play.json").exists():
        server = read_state(path).server
        if server is not None and pid_alive(server.pid):
            stop_pid(server.pid)


def require_bwrap() -> None:
    """Skip without bubblewrap on a developer machine; fail in CI (``.ci/run`` installs it):
    the sealed-agent tests need the sandbox."""
    from dabench.isolation import bwrap_path

    if bwrap_path() is None:
        skip_unless_ci("bubblewrap (bwrap) is not installed")


@pytest.fixture
def bwrap_installed() -> None:
    """``require_bwrap`` as a fixture (``usefixtures``)."""
    require_bwrap()
