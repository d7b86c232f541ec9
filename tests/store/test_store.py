"""The results store: ``dabench publish`` into a real DuckDB file and into Elasticsearch (a
local stand-in following the documented ``_bulk``, mapping and ``_search`` APIs), idempotent
by key, and ``dabench history --store`` trends across three published runs."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from tests.elastic.fake_elasticsearch import FakeElasticsearch
from tests.stats.builders import T0, episode, grade, write_run
from typer.testing import CliRunner

from dabench.cli import app
from dabench.elastic import BulkWriteError, connect_elasticsearch
from dabench.errors import UserInputError
from dabench.store import collect_run, sparkline, trends
from dabench.store.duckdb_store import DuckDBStore
from dabench.store.es_store import MAPPINGS, ElasticsearchStore
from dabench.store.open import open_store

EXAMPLES = Path(__file__).parents[2] / "examples"


def three_runs(root: Path) -> list[Path]:
    """Runs r1..r3, a day apart: arm ``a2`` passes 1, 2 then 3 of 4 tasks; ``a0`` passes 1 of
    4 every time; task t4 of a2 in r1 reported no usage."""
    runs = []
    for n in (1, 2, 3):
        eps, grades = [], []
        for arm, passes in (("a0", 1), ("a2", n)):
            for t in range(4):
                known = not (n == 1 and arm == "a2" and t == 3)
                ep = episode(arm, f"t{t + 1}", suite="s3" if t >= 2 else "s2",
                             usage_known=known)  # fmt: skip
                eps.append(ep)
                grades.append(grade(ep, t < passes))
        started = T0 + timedelta(days=n)
        runs.append(write_run(root / f"r{n}", eps, grades, k=1, run_id=f"r{n}", started_at=started))
    return runs


def test_publish_to_duckdb_is_idempotent_and_keyed(tmp_path: Path) -> None:
    runs = three_runs(tmp_path / "runs")
    db = tmp_path / "results.duckdb"
    cli = CliRunner()
    for _ in range(2):  # publishing twice leaves the same rows
        result = cli.invoke(app, ["publish", *map(str, runs), "--store", f"duckdb:{db}"])
        assert result.exit_code == 0, result.output
        assert "published r3 -> duckdb" in result.output
    store = DuckDBStore(db)
    assert (store.count("runs"), store.count("episodes")) == (3, 24)
    con = duckdb.connect(str(db), read_only=True)
    try:
        keys = con.execute(
            "SELECT count(DISTINCT (run_id, arm, task_id, attempt)) FROM episodes"
        ).fetchone()
        unknown = con.execute(
            "SELECT run_id, arm, task_id FROM episodes WHERE tokens IS NULL"
        ).fetchall()
        acc = con.execute(
            "SELECT run_id, accuracy FROM arm_stats WHERE arm = 'a2' AND dimension = 'overall' "
            "ORDER BY started_at"
        ).fetchall()
        manifest = con.execute("SELECT manifest FROM runs WHERE run_id = 'r2'").fetchone()
    finally:
        con.close()
    assert keys == (24,)
    assert unknown == [("r1", "a2", "t4")]  # unknown usage stays unknown, never 0
    assert acc == [("r1", 0.25), ("r2", 0.5), ("r3", 0.75)]
    assert manifest and json.loads(manifest[0])["run_id"] == "r2"


def test_history_from_the_store_shows_a_trend(tmp_path: Path) -> None:
    runs = three_runs(tmp_path / "runs")
    db = tmp_path / "results.duckdb"
    spec = f"duckdb:{db}"
    cli = CliRunner()
    assert cli.invoke(app, ["publish", *map(str, runs), "--store", spec]).exit_code == 0
    page = tmp_path / "history.html"
    result = cli.invoke(app, ["history", str(tmp_path), "--store", spec, "--html", str(page)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    a2 = next(line for line in lines if "│ a2 " in line and " all " in line)
    assert "▃▅▆" in a2 and "75.0%" in a2 and "+50.0 pts" in a2
    a0 = next(line for line in lines if "│ a0 " in line and " all " in line)
    assert "▃▃▃" in a0 and "+0.0 pts" in a0
    assert any("│ a2 " in line and " s3 " in line for line in lines)  # per suite too
    html = page.read_text(encoding="utf-8")
    assert html.count('<tr class="series"') == 6  # 2 arms x (all, s2, s3)
    assert 'data-arm="a2" data-suite="all" data-runs="3"' in html
    assert "+50.0 points" in html


def test_series_and_sparklines(tmp_path: Path) -> None:
    runs = three_runs(tmp_path / "runs")
    stats = [s for r in runs for s in collect_run(r).arm_stats]
    series = {(s.arm, s.suite): s for s in trends(stats)}
    a2 = series[("a2", "all")]
    assert [p.run_id for p in a2.points] == ["r1", "r2", "r3"]
    assert a2.change() == pytest.approx(0.5)
    assert sparkline([0.0, 0.5, 1.0, None]) == "▁▅█·"


def test_bad_store_specs_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="expected duckdb:PATH"):
        open_store("sqlite:x.db", None)
    with pytest.raises(UserInputError, match="give one"):
        open_store("duckdb:x", "http://127.0.0.1:1")
    store, _ = open_store(f"duckdb:{tmp_path / 'none.duckdb'}", None)
    with pytest.raises(UserInputError, match="no results store here"):
        store.arm_stats()
    (tmp_path / "junk.duckdb").write_text("not a database", encoding="utf-8")
    junk, _ = open_store(f"duckdb:{tmp_path / 'junk.duckdb'}", None)
    with pytest.raises(UserInputError, match="not a DuckDB results store"):
        junk.arm_stats()


def test_publish_to_elasticsearch(tmp_path: Path, fake_es: FakeElasticsearch) -> None:
    runs = three_runs(tmp_path / "runs")
    cli = CliRunner()
    args = ["--elasticsearch", fake_es.url, "--api-key", "es-key"]
    for _ in range(2):
        result = cli.invoke(app, ["publish", *map(str, runs), *args])
        assert result.exit_code == 0, result.output
    assert len(fake_es.docs("dabench-results-runs")) == 3
    episodes = fake_es.docs("dabench-results-episodes")
    assert len(episodes) == 24 and episodes["r1/a2/t4/0"]["tokens"] is None
    mapping = fake_es.indices["dabench-results-episodes"]["mappings"]
    assert mapping["dynamic"] == "strict"
    assert mapping["properties"] == MAPPINGS["episodes"]
    result = cli.invoke(app, ["history", str(tmp_path), *args])
    assert result.exit_code == 0, result.output
    assert "▃▅▆" in next(line for line in result.output.splitlines() if "│ a2 " in line)


def test_refused_documents_are_reported_item_by_item(
    tmp_path: Path, fake_es: FakeElasticsearch
) -> None:
    (run,) = three_runs(tmp_path / "runs")[:1]
    fake_es.refuse_ids = {"r1/a0/t2/0", "r1/a0/t3/0"}
    store = ElasticsearchStore(connect_elasticsearch(fake_es.url, "es-key"))
    with pytest.raises(
        BulkWriteError, match=r"episodes: 2 document\(s\) refused; first: r1/a0/t2/0"
    ):
        store.publish(collect_run(run))


def test_kibana_dashboard_objects_are_consistent() -> None:
    """The shipped saved objects parse, their references resolve, and every field a Lens
    panel reads exists in the mapping of its data view's index."""
    path = EXAMPLES / "kibana" / "dabench_results_dashboard.ndjson"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    summary, objects = lines[-1], lines[:-1]
    assert summary["exportedCount"] == len(objects) and summary["missingRefCount"] == 0
    by_id = {(o["type"], o["id"]): o for o in objects}
    assert {o["type"] for o in objects} == {"index-pattern", "lens", "dashboard"}
    for obj in objects:
        for ref in obj["references"]:
            assert (ref["type"], ref["id"]) in by_id, (obj["id"], ref)
        if obj["type"] != "lens":
            continue
        (ref,) = obj["references"]
        index = by_id[("index-pattern", ref["id"])]["attributes"]["title"]
        fields = MAPPINGS[index.removeprefix("dabench-results-")]
        layers = obj["attributes"]["state"]["datasourceStates"]["formBased"]["layers"]
        used = {c["sourceField"] for layer in layers.values() for c in layer["columns"].values()}
        assert used - {"___records___"} <= set(fields), (obj["id"], used - set(fields))
    dashboard = by_id[("dashboard", "dabench-results-dashboard")]
    panels = json.loads(dashboard["attributes"]["panelsJSON"])
    assert len(panels) == len(dashboard["references"]) == 4
