"""The catalog describes the warehouse exactly, with enough breadth for discovery."""

from __future__ import annotations

import json
from pathlib import Path

from dabench.world import World
from dabench.world.constants import END_DATE


def test_breadth(world: World) -> None:
    datasets = world.catalog.datasets
    assert len(datasets) >= 30
    assert len({d.domain for d in datasets}) >= 5
    kinds = {d.kind for d in datasets}
    assert {"fact", "dimension", "staging", "aggregate", "legacy", "reference"} <= kinds
    assert len(world.catalog.glossary) >= 10
    assert len(world.catalog.curated_queries) >= 8
    assert len(world.catalog.lineage) >= 20
    for d in datasets:
        assert d.description and d.owner and d.title, d.id
        assert all(c.description for c in d.columns), d.id


def test_catalog_matches_warehouse(world: World) -> None:
    con = world.connect()
    try:
        tables = con.execute(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables "
            "WHERE table_catalog = current_database() ORDER BY 1"
        ).fetchall()
        assert sorted(t[0] for t in tables) == sorted(d.id for d in world.catalog.datasets)
        for d in world.catalog.datasets:
            schema, table = d.id.split(".")
            cols = con.execute(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
                [schema, table],
            ).fetchall()
            assert [(c.name, c.type) for c in d.columns] == cols, d.id
            count = con.execute(f"SELECT count(*) FROM {d.id}").fetchone()
            assert count is not None and count[0] == d.row_count > 0, d.id
            assert world.manifest.table_rows[d.id] == d.row_count
    finally:
        con.close()


def test_references_resolve(world: World) -> None:
    ids = {d.id for d in world.catalog.datasets}
    glossary = {g.id for g in world.catalog.glossary}
    for d in world.catalog.datasets:
        assert set(d.upstream) <= ids, d.id
        assert set(d.glossary_terms) <= glossary, d.id
        for c in d.columns:
            assert set(c.glossary_terms) <= glossary, (d.id, c.name)
        assert d.deprecated == (d.replaced_by is not None), d.id
        if d.replaced_by:
            assert d.replaced_by in ids and not world.dataset(d.replaced_by).deprecated
    for g in world.catalog.glossary:
        assert set(g.related_datasets) <= ids, g.id
    for e in world.catalog.lineage:
        assert {e.upstream, e.downstream} <= ids
    for q in world.catalog.curated_queries:
        assert set(q.datasets) <= ids, q.id


def test_near_duplicates_and_freshness(world: World) -> None:
    assert world.dataset("staging.orders_raw").kind == "staging"
    legacy = world.dataset("core.orders")
    assert legacy.deprecated and legacy.replaced_by == "sales.orders"
    daily = world.dataset("analytics.daily_sales")
    assert daily.kind == "aggregate"
    # Not stale by date: the gap (late-arriving orders) does not show in last_loaded.
    assert daily.last_loaded == END_DATE == world.dataset("sales.orders").last_loaded
    orders = world.manifest.table_rows["sales.orders"]
    assert world.manifest.table_rows["staging.orders_raw"] > orders


def test_curated_queries_run(world: World) -> None:
    con = world.connect()
    try:
        for q in world.catalog.curated_queries:
            assert con.execute(q.sql).fetchall(), q.id
    finally:
        con.close()


def test_monthly_fast_path_is_exact_and_daily_undercounts(world: World) -> None:
    """analytics.monthly_revenue equals the revenue policy month by month; daily_sales misses
    late-arriving orders in every year (by more than the trap margin)."""
    con = world.connect()
    try:
        by_month = {q.id: q.sql for q in world.catalog.curated_queries}["revenue-by-month"]
        rows = con.execute(
            f"SELECT f.month, round(f.revenue, 2), m.revenue FROM ({by_month}) f "
            "JOIN analytics.monthly_revenue m USING (month) ORDER BY 1"
        ).fetchall()
        assert len(rows) == 36
        assert all(float(r[1]) == float(r[2]) for r in rows)
        years = con.execute(
            f"SELECT year(f.month) AS y, sum(f.revenue), (SELECT sum(revenue) FROM "
            "analytics.daily_sales d WHERE year(d.sales_date) = year(f.month)) "
            f"FROM ({by_month}) f GROUP BY 1 ORDER BY 1"
        ).fetchall()
        for _, facts, daily in years:
            assert float(daily) < 0.9 * float(facts)
    finally:
        con.close()


def test_catalog_json_is_canonical(world_dir: Path) -> None:
    text = (world_dir / "catalog.json").read_text(encoding="utf-8")
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
