"""Every script under benchmarks/ runs in its ``--quick`` mode (small sizes, seconds), exits 0
and prints its figures, so a benchmark cannot rot unnoticed. Nothing here asserts a time: the
figures themselves are only printed (``python -m benchmarks.NAME`` without ``--quick`` measures).

The default run (``.ci/run``) runs every quick mode. ``peer_inspect`` runs in a venv of its
own with inspect_ai (:func:`tests.harness.third_party.peer_inspect_python`: dabench's
dependencies at this venv's versions, dabench from ``src/``), so the tests' venv never
installs inspect_ai. The scripts share the test cache (``$DABENCH_CACHE``), so the world
they default to and any install are built once, not once per script.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.environment import skip_unless_ci
from tests.harness.third_party import peer_inspect_python

from dabench.sandbox import cache_root

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"

FIGURES: dict[str, str] = {
    "cli_startup": r"dabench --version\s+\d+\.\d+",
    "contention": r"light p50/p95 idle\s+\d+\.\d+",
    "elastic_overhead": r"kibana /converse/async \(SSE\): 10 rounds.*wall median \d+\.\d+ ms",
    "episode_keys": r"episode keys add [+-]\d+\.\d+ ms",
    "fuzz_tasks": r"tracebacks/hangs/invalid-accepted: 0/0/0",
    "grading_throughput": r"grade_run, 100 deterministic episodes.*\d+ episodes/s",
    "heavy_query": r"default\s+light p50/p95 idle\s+\d+\.\d+",
    "idle_review": r"reference: lean MCP client\s+.\s+ok",
    "mcp_target": r"mcp-stdio-shared\s+4\s+4\s+\d+\.\d+",
    "naive_seeds": r"0 naive answers accepted; 0 truths rejected when rounded as asked\n"
    r"static checks \(\d+ items\): 0 of 1 worlds refused",
    "memory_lookup": r"\| memory_manage list \| \d+\.\d+ \| \d+\.\d+ \| \d+\.\d+ \|",
    "peer_inspect": r"\s4\s.*\d+\.\d+x",
    "pg_warehouse_latency": r"sql_query  p50 ratio postgres/duckdb = \d+\.\d+",
    "platform_roundtrip": r"dabench lean client, HTTP\s+\d+\.\d+",
    "platform_start": r"a0\s+\d+\.\d+\s+\d+\.\d+\s+1",
    "providers_overhead": r"openai-compat\s+calls\s+20\s+p50\s+\d+\.\d+ ms",
    "report_scale": r"\s+200\s+\d+\.\d+\s+\d+\.\d+",
    "run_all": r"report_scale\.n200\.total_s\s+\d+\.\d+",
    "runner_throughput": r"│ 4\s+│ 10\s+│ 20\s+│.*│ \d\.\d{3}",
    "sandbox_overhead": r"sandbox overhead per program run \(median\): [+-]?\d+\.\d+ ms",
    "scale_out": r"2 Ray nodes / 1 Ray node: \d+\.\d+x",
    "search_ranking": r"embedding/wordllama\s+\d\.\d{3}",
    "semantic_layer_parity": r"parity: 3/3 equal the gold",
    "sequential": r"largest planned-vs-simulated gap: \d+\.\d+ points",
    "soak": r"harness errors in total: 0",
    "warm_pool": r"warm_pool 1\s+\d+\.\d+s",
    "world_build": r"│\s+1 │\s+[\d,]+ │",
    "world_scale": r"│ 1 -> 2 │\s+\d+\.\d+",
    "world_seeds": r"1/1 seeds pass",
}
"""Per script, a pattern one of its figure lines must match in quick mode."""


def scripts() -> list[str]:
    """The runnable scripts under benchmarks/ (helper modules have no ``__main__`` block)."""
    return sorted(
        p.stem
        for p in BENCHMARKS.glob("*.py")
        if 'if __name__ == "__main__":' in p.read_text(encoding="utf-8")
    )


def test_every_script_has_a_quick_mode_and_a_figure() -> None:
    """A new script without ``--quick`` or without an entry here fails, not just goes untested."""
    found = scripts()
    assert sorted(FIGURES) == found
    for name in found:
        assert '"--quick"' in (BENCHMARKS / f"{name}.py").read_text(encoding="utf-8"), name


@pytest.fixture(scope="module")
def world() -> Path:
    """World 930 at scale 1 from the test cache (what every ``--world`` defaults to): built
    on first use, then reused by every script and every later session."""
    from dabench.world.cache import default_world

    return default_world()


def _takes_world(name: str) -> bool:
    text = (BENCHMARKS / f"{name}.py").read_text(encoding="utf-8")
    return re.search(r"add_argument\(\s*\"--world\"", text) is not None


def _needs(name: str) -> None:
    """Skip a script whose system dependency is missing (a failure in CI, which installs
    them all)."""
    if name in {"pg_warehouse_latency", "world_scale", "contention"} and not list(
        Path("/usr/lib/postgresql").glob("*/bin/postgres")
    ):
        skip_unless_ci("PostgreSQL binaries are not installed")
    if name == "sandbox_overhead":
        from dabench.isolation import bwrap_path

        if bwrap_path() is None:
            skip_unless_ci("bubblewrap (bwrap) is not installed")


@contextmanager
def _interpreter(name: str) -> Iterator[tuple[str, dict[str, str]]]:
    """The Python that runs ``name`` and what it adds to the environment: this one, or for
    ``peer_inspect`` the inspect_ai venv with ``src/`` first on ``PYTHONPATH`` (dabench is not
    installed there)."""
    if name != "peer_inspect":
        yield sys.executable, {}
        return
    with peer_inspect_python(ROOT) as python:
        path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
        yield str(python), {"PYTHONPATH": path}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FIGURES))
def test_quick_mode_runs_and_prints_figures(name: str, world: Path) -> None:
    """``python -m benchmarks.NAME --quick`` exits 0 and prints its figures."""
    _needs(name)
    with _interpreter(name) as (python, extra_env):
        argv = [python, "-m", f"benchmarks.{name}", "--quick"]
        if _takes_world(name):
            argv += ["--world", str(world)]
        env = {**os.environ, **extra_env, "DABENCH_CACHE": str(cache_root()), "COLUMNS": "200"}
        done = subprocess.run(
            argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
        )
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stderr[-3000:]}"
    assert re.search(FIGURES[name], done.stdout), f"{name} printed no figures:\n{done.stdout}"
