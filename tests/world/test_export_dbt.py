"""``world export --dbt`` writes a complete dbt project without dbt installed (building it and
MetricFlow's parity are tests/harness/test_semantic_layer.py), and the pieces the metric role
relies on: the task -> metric map, the multi-block result reader and the role proposal."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dabench.errors import UserInputError
from dabench.providers.base import ToolSpec
from dabench.roles import ToolRoles
from dabench.sqlresult import SqlToolError, read_sql_result
from dabench.targets.inspect import propose_roles
from dabench.tasks.loader import load_builtin_tasks
from dabench.tasks.metric_parity import METRIC_QUERIES, MetricQuery, answer_cell, same_answer
from dabench.world.export_dbt import METRICS, SEMANTIC_MODELS, export_dbt
from dabench.world.load import World


def test_project_has_every_source_page_and_metric(world: World, tmp_path: Path) -> None:
    out = export_dbt(world, tmp_path / "p")
    sources = yaml.safe_load((out / "models" / "sources.yml").read_text())["sources"]
    tables = {f"{s['schema']}.{t['name']}": t for s in sources for t in s["tables"]}
    assert set(tables) == {d.id for d in world.catalog.datasets}
    for ds in world.catalog.datasets:
        described = {c["name"]: c["description"] for c in tables[ds.id]["columns"]}
        assert all(described[c.name].startswith(c.description) for c in ds.columns)
    docs = (out / "models" / "docs.md").read_text()
    assert all(f"{{% docs {p.id.replace('-', '_')} %}}" in docs for p in world.pages)
    # Every page is reachable from a node (a docs block no description references is shown by
    # nothing, dbt-mcp's node details included): a source it names among its related datasets,
    # a mart whose policy it states, or the time spine (the fiscal calendar).
    models = yaml.safe_load((out / "models" / "models.yml").read_text())["models"]
    described = " ".join(
        [t["description"] for t in tables.values()] + [m["description"] for m in models]
    )
    for page in world.pages:
        assert f"doc('{page.id.replace('-', '_')}')" in described, page.id
    for page in world.pages:
        for related in page.related_datasets:
            table = ".".join(related.lower().split(".")[:2])
            if table in tables:
                assert f"doc('{page.id.replace('-', '_')}')" in tables[table]["description"]
    semantic = yaml.safe_load((out / "models" / "semantic.yml").read_text())
    assert [m["name"] for m in semantic["metrics"]] == [m.name for m in METRICS]
    assert len(semantic["semantic_models"]) == len(SEMANTIC_MODELS)
    spine = yaml.safe_load((out / "models" / "models.yml").read_text())["models"][-1]
    assert "doc('fiscal_calendar')" in spine["description"]
    grains = [g["name"] for g in spine["time_spine"]["custom_granularities"]]
    assert grains == ["fiscal_quarter", "fiscal_year"]
    profiles = yaml.safe_load((out / "profiles.yml").read_text())["dabench_world"]
    assert profiles["target"] == "readonly"
    assert profiles["outputs"]["readonly"]["config_options"] == {"access_mode": "READ_ONLY"}
    path = profiles["outputs"]["readonly"]["settings"]["search_path"].split(",")
    assert path[0] == "semantic.marts" and "warehouse.sales" in path
    assert profiles["outputs"]["build"]["attach"][0]["read_only"] is True
    written = {p.name for p in out.rglob("*")}
    assert not written & {"world.json", "tasks.lock.json", "catalog.json"}
    with pytest.raises(UserInputError, match="--force"):
        export_dbt(world, out)
    assert (out / "profiles.yml").stat().st_mode & 0o777 == 0o600
    with pytest.raises(UserInputError, match="no such DuckDB file"):
        export_dbt(world, tmp_path / "q", warehouse=tmp_path / "missing.duckdb")
    with pytest.raises(UserInputError, match="--reader goes with --warehouse DSN"):
        export_dbt(world, tmp_path / "q", reader="postgresql://r@h/db")
    # (a PostgreSQL warehouse: tests/world/test_export_sql.py and test_semantic_layer.py)


def test_every_mapped_task_exists_and_names_a_metric() -> None:
    tasks = {t.id: t for t in load_builtin_tasks().tasks}
    metrics = {m.name for m in METRICS}
    for task_id, query in METRIC_QUERIES.items():
        assert task_id in tasks and tasks[task_id].grading.kind == "numeric", task_id
        assert set(query.metrics) <= metrics, task_id


def test_answer_cell_and_same_answer() -> None:
    q = MetricQuery(metrics=["revenue"], group_by=["order__channel"], answer="revenue")
    assert answer_cell(["order__channel", "revenue"], [["web", "12.5"]], q) == "12.5"
    assert answer_cell(["x"], [], q) is None
    with pytest.raises(KeyError, match="no column 'revenue'"):
        answer_cell(["order__channel"], [["web"]], q)
    assert same_answer(83729.16, "83729.15999999997") and not same_answer(12, "12.01")


def test_mcp_metricflow_results_read_as_tables() -> None:
    rows = '[{"order__channel": "web", "revenue": "738323.66"}]'
    table = read_sql_result('{"info": "", "error": null}\n' + rows)
    assert table.columns == ["order__channel", "revenue"] and table.rows == [["web", 738323.66]]
    empty = read_sql_result('{"info": "", "error": null}\n[]')
    assert empty.rows == [] and empty.notes == ["no rows"]
    failed = '{"info": "\\nERROR: Got error(s) during query resolution.\\n", "error": null}\n[]'
    with pytest.raises(SqlToolError, match="ERROR: Got error"):
        read_sql_result(failed)


def test_inspect_proposes_the_metric_role() -> None:
    def spec(name: str, props: dict[str, object], required: list[str]) -> ToolSpec:
        schema = {"type": "object", "properties": props, "required": required}
        return ToolSpec(name=name, description=f"{name} of the semantic layer", input_schema=schema)

    strings = {"type": "array", "items": {"type": "string"}}
    tools = [
        spec("query_tool", {"session_id": {"type": "string"}, "metrics": strings,
                            "group_by": strings, "where": {"type": "string"}, "order": strings,
                            "limit": {"type": "integer"}}, ["session_id", "metrics"]),
        spec("list_metrics_tool", {"search": {"type": "string"}}, []),
        spec("list_dimensions_tool", {"metrics": strings}, []),
    ]  # fmt: skip
    proposal = propose_roles(tools)
    assert proposal.roles.dump() == {
        "metric": {
            "tool": "query_tool",
            "arguments": {"order_by": "order"},
            "also": ["list_metrics_tool", "list_dimensions_tool"],
        }
    }
    assert proposal.target == {"session_argument": "session_id"}
    assert ToolRoles.model_validate(proposal.roles.dump()).roles_of("list_metrics_tool") == [
        "metric"
    ]
