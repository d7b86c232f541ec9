"""Proof on real third-party MCP servers: ``examples/third_party.yaml`` runs the oracle over
every S1 and S2 task on the reference platform (a0), on ``mcp-server-motherduck`` (PyPI, its
own venv, DuckDB 1.5) over the world exported with ``--storage-version v1.5.0``, and on
``@modelcontextprotocol/server-postgres`` (npm) over the world exported to a real PostgreSQL,
read-only; every episode completes and passes, and the report shows the three arms.

The example's server commands (``uvx``/``npx`` and fixed paths, for a user) are replaced by the
cached installs of :mod:`tests.harness.third_party`; its role maps are used as written.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.harness.third_party import (
    MOTHERDUCK_PIN,
    MOTHERDUCK_STORAGE,
    SERVER_POSTGRES_PIN,
    SERVER_POSTGRES_PKG,
    grant_reader,
    motherduck_command,
    server_postgres_command,
)
from tests.postgres_server import postgres_cluster
from typer.testing import CliRunner

from dabench.cli import app
from dabench.journal.store import Journal, load_grades, read_manifest
from dabench.providers.base import ToolSpec
from dabench.targets.base import TargetContext
from dabench.targets.registry import make_target
from dabench.tasks.engines import truth_sql_for
from dabench.tasks.loader import load_tasks
from dabench.world.export_sql import export_duckdb, export_postgres, storage_version_number
from dabench.world.load import load_world

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "third_party.yaml"
THIRD_PARTY = ("motherduck", "postgres")


def _arm(experiment: dict[str, Any], name: str) -> dict[str, Any]:
    return next(a for a in experiment["arms"] if a["name"] == name)


@pytest.fixture(scope="session")
def commands() -> dict[str, list[str]]:
    """Both servers' commands, installed concurrently on a cold cache (pip and npm)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        md = pool.submit(motherduck_command)
        pg = pool.submit(server_postgres_command)
        return {"motherduck": md.result(), "postgres": pg.result()}


@pytest.fixture(scope="module")
def motherduck_db(real_world: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The world as a DuckDB file that DuckDB 1.5 reads."""
    out = tmp_path_factory.mktemp("motherduck") / "w930-v1.5.duckdb"
    export_duckdb(load_world(real_world), out, storage_version=MOTHERDUCK_STORAGE)
    return out


@pytest.fixture(scope="module")
def reader_dsn(real_world: Path) -> Iterator[str]:
    """The world exported to a throwaway PostgreSQL; the DSN of its read-only role."""
    with postgres_cluster() as dsn:
        export_postgres(load_world(real_world), dsn)
        yield grant_reader(dsn)


@pytest.fixture(scope="module")
def experiment(
    commands: dict[str, list[str]], motherduck_db: Path, reader_dsn: str, real_world: Path
) -> dict[str, Any]:
    """examples/third_party.yaml on the test world, the servers' commands replaced by the
    cached installs (every other field as shipped)."""
    data = yaml.safe_load(EXAMPLE.read_text())
    data["world"] = {"dir": str(real_world)}
    md = _arm(data, "motherduck")["target"]
    assert md["command"][:2] == ["uvx", f"mcp-server-motherduck=={MOTHERDUCK_PIN}"]
    md["command"] = [*commands["motherduck"], *md["command"][2:]]
    md["command"][md["command"].index("--db-path") + 1] = str(motherduck_db)
    pg = _arm(data, "postgres")["target"]
    assert pg["command"][:3] == ["npx", "-y", f"{SERVER_POSTGRES_PKG}@{SERVER_POSTGRES_PIN}"]
    pg["command"] = [*commands["postgres"], reader_dsn]
    return data


async def _tools(target_config: dict[str, Any], tmp_path: Path) -> list[ToolSpec]:
    target = make_target(copy.deepcopy(target_config), TargetContext(None, tmp_path))
    await target.start()
    try:
        session = await target.open_session()
        return await session.tools()
    finally:
        await target.stop()


def test_motherduck_reads_only_the_exported_storage_version(motherduck_db: Path) -> None:
    # DuckDB 1.5 reads storage versions 64..68; the world's own file is newer.
    assert storage_version_number(motherduck_db) <= 68


@pytest.mark.parametrize("name", THIRD_PARTY)
async def test_role_map_matches_the_tool_schemas(
    name: str, experiment: dict[str, Any], tmp_path: Path
) -> None:
    """Every role's tool exists; every canonical argument sent has a declared parameter of
    that name and every dropped one has none (the schema would reject or ignore it)."""
    target = _arm(experiment, name)["target"]
    tools = {t.name: t for t in await _tools(target, tmp_path)}
    for role, binding in target["roles"].items():
        spec = tools[binding["tool"]]
        params = set((spec.input_schema.get("properties") or {}).keys())
        for canonical in {"sql": ["sql"], "list": []}.get(role, []):
            assert binding.get("arguments", {}).get(canonical, canonical) in params
        for dropped in binding.get("drop", []):
            assert dropped not in params, (name, role, dropped)


@pytest.mark.parametrize("name", THIRD_PARTY)
def test_target_inspect_proposes_the_example_maps(name: str, experiment: dict[str, Any]) -> None:
    """`dabench target inspect` on the real server proposes the example's sql (and list)
    bindings, and no ``describe`` for motherduck: its ``list_columns`` takes the schema apart
    from the table (see test_motherduck_list_columns_refuses_qualified_names)."""
    target = _arm(experiment, name)["target"]
    result = CliRunner().invoke(
        app, ["target", "inspect", "--format", "json", "--", *target["command"]]
    )
    assert result.exit_code == 0, result.output
    proposed = json.loads(result.output[result.output.index("{") :])["roles"]
    assert proposed == target["roles"]


async def test_motherduck_list_columns_refuses_qualified_names(
    experiment: dict[str, Any], tmp_path: Path
) -> None:
    """Why the motherduck map has no describe role: the canonical argument is a qualified
    name, which list_columns cannot find, and it says so in a result not marked as an error.
    Two sessions at once, as the example runs them (a server process per episode): both
    processes read the one file side by side."""
    target = make_target(
        copy.deepcopy(_arm(experiment, "motherduck")["target"]), TargetContext(None, tmp_path)
    )
    await target.start()
    try:
        assert target.describe()["mcp_sessions"] == "per-episode"
        first, second = await target.open_session(), await target.open_session()
        qualified = await first.call("list_columns", {"table": "sales.orders"})
        split = await second.call("list_columns", {"table": "orders", "schema": "sales"})
    finally:
        await target.stop()
    assert not qualified.is_error
    assert "Table or view not found" in qualified.text
    assert json.loads(split.text)["success"] is True


@pytest.fixture(scope="module")
def example_run(experiment: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example run once: three arms, the oracle, S1 + S2, k = 1, graded and reported.
    Each third-party arm runs its episodes on one server process (``share_process``, each
    episode its own handle) instead of the example's process per episode: a server start for
    each of the 182 episodes was most of this test's CPU; two processes on the one DuckDB file
    at once are tested in test_motherduck_list_columns_refuses_qualified_names."""
    base = tmp_path_factory.mktemp("third-party")
    shared = copy.deepcopy(experiment)
    for name in THIRD_PARTY:
        _arm(shared, name)["target"]["share_process"] = True
    path = base / "third_party.yaml"
    path.write_text(yaml.safe_dump(shared, sort_keys=False))
    run_dir = base / "run"
    result = CliRunner().invoke(
        app, ["run", str(path), "--out", str(run_dir), "--no-progress"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return run_dir


def test_oracle_passes_every_task_on_every_platform(example_run: Path) -> None:
    episodes = Journal(example_run).load()
    tasks = {e.task_id for e in episodes}
    assert {e.suite for e in episodes} == {"s1", "s2"}
    by_arm: dict[str, int] = {}
    for ep in episodes:
        assert ep.status == "completed", (ep.key, ep.harness_error)
        assert not any(c.is_error for c in ep.tool_calls), (ep.key, ep.tool_calls)
        by_arm[ep.arm] = by_arm.get(ep.arm, 0) + 1
    assert by_arm == {"a0": len(tasks), "motherduck": len(tasks), "postgres": len(tasks)}
    grades = load_grades(example_run)
    assert len(grades) == len(episodes)
    assert [g.key for g in grades if not g.passed or g.excluded] == []
    sql_calls = {
        ep.arm: {c.name for c in ep.tool_calls}
        for ep in episodes
        if ep.task_id == "s2.top-agent-tickets"
    }
    assert sql_calls == {
        "a0": {"sql_query"},
        "motherduck": {"execute_query"},
        "postgres": {"query"},
    }


def test_postgres_arm_got_postgres_sql(example_run: Path) -> None:
    """The oracle sends the truth SQL in the target's dialect: server-postgres received the
    PostgreSQL truth SQL (override or sqlglot's translation), motherduck DuckDB's."""
    manifest = read_manifest(example_run)
    targets = {a["name"]: a["target"] for a in manifest.arms}
    assert targets["postgres"]["sql_dialect"] == "postgres"
    assert targets["motherduck"]["sql_dialect"] == "duckdb"
    efficiency = {a["name"]: a["efficiency_source"] for a in manifest.arms}
    assert efficiency == {"a0": "platform", "motherduck": "harness", "postgres": "harness"}
    tasks = {t.id: t for t in load_tasks([example_run / "tasks.yaml"]).tasks}
    differs = 0
    for ep in Journal(example_run).load():
        grading = tasks[ep.task_id].grading
        sent = [c.arguments["sql"] for c in ep.tool_calls if "sql" in c.arguments]
        if ep.arm == "a0" or grading.truth_sql is None:
            continue
        dialect = "postgres" if ep.arm == "postgres" else "duckdb"
        assert sent == [truth_sql_for(grading, dialect)], ep.key
        differs += ep.arm == "postgres" and sent[0] != grading.truth_sql
    assert differs > 10


def test_report_lists_the_three_platforms(example_run: Path) -> None:
    """One report, the three platforms side by side: each arm's failure-taxonomy row counts
    every task as passed and nothing else (no wrong answer, no harness error)."""
    report = (example_run / "report.md").read_text()
    taxonomy = report[report.index("## Failure taxonomy") :]
    header = next(line for line in taxonomy.splitlines() if line.startswith("| arm |"))
    assert "harness error" in header
    n_tasks = len(read_manifest(example_run).task_ids)
    for arm in ("a0", "motherduck", "postgres"):
        row = next(line for line in taxonomy.splitlines() if line.startswith(f"| `{arm}` |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1:] == [str(n_tasks)] + ["0"] * (len(cells) - 2), row
