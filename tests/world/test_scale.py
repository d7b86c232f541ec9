"""--scale multiplies the fact tables linearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from dabench.world import World, build_world


def test_scale_two_doubles_the_facts(world: World, tmp_path: Path) -> None:
    two = build_world(930, 2, tmp_path / "s2").table_rows
    one = world.manifest.table_rows
    assert one["sales.orders"] == 1000
    assert two["sales.orders"] == 2 * one["sales.orders"]
    for fact in ("sales.order_lines", "marketing.web_events", "support.tickets"):
        assert 1.8 < two[fact] / one[fact] < 2.2, fact
    assert two["product.products"] == one["product.products"]


def test_lines_per_order_widen_only_above_scale_ten() -> None:
    """Scales up to 10 (every suite and test world) keep 6..15 lines per order; from scale 100
    on the range is fixed again (6..55), so order lines are linear in scale there."""
    from dabench.world.datasets.sales import lines_per_order

    assert {lines_per_order(s) for s in (1, 2, 5, 10)} == {(6, 15)}
    assert lines_per_order(11) == (6, 15)
    assert lines_per_order(55) == (6, 35)
    assert lines_per_order(100) == lines_per_order(1000) == (6, 55)
    highs = [lines_per_order(s)[1] for s in range(1, 1001)]
    assert highs == sorted(highs)
    # about 30.5 lines per order from scale 100 on: >= 30 M order lines at scale 1000
    assert 1000 * 1000 * sum(lines_per_order(1000)) / 2 >= 30_000_000


def test_build_connection_bounds_memory_and_spills_beside_the_file(tmp_path: Path) -> None:
    import duckdb

    from dabench.world.build import BUILD_MEMORY_LIMIT, BUILD_TEMP_DIR, build_connection

    query = (
        "SELECT name, value FROM duckdb_settings() WHERE name IN "
        "('memory_limit', 'temp_directory', 'threads', 'enable_external_access')"
    )
    con = build_connection(tmp_path / "warehouse.duckdb")
    try:
        settings = dict(con.execute(query).fetchall())
    finally:
        con.close()
    reference = duckdb.connect(config={"memory_limit": BUILD_MEMORY_LIMIT})
    try:
        expected_limit = dict(reference.execute(query).fetchall())["memory_limit"]
    finally:
        reference.close()
    assert settings["memory_limit"] == expected_limit
    assert settings["temp_directory"] == str(tmp_path / BUILD_TEMP_DIR)
    assert settings["threads"] == "1"
    assert settings["enable_external_access"] == "false"


def test_chunk_bounds_cover_every_key_once() -> None:
    from dabench.world.datasets.spec import chunk_bounds

    assert chunk_bounds(1000, 400) == [(0, 400), (400, 800), (800, 1000)]
    assert chunk_bounds(100_000, 100_000) == [(0, 100_000)]
    assert chunk_bounds(0, 10) == [(0, 0)]


def _tables(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every warehouse table's rows in stored order."""
    from dabench.world import connect_warehouse

    con = connect_warehouse(path)
    try:
        names = con.execute(
            "SELECT schema_name || '.' || table_name FROM duckdb_tables() ORDER BY ALL"
        ).fetchall()
        return {n: con.execute(f"SELECT * FROM {n} ORDER BY rowid").fetchall() for (n,) in names}
    finally:
        con.close()


def test_chunked_fact_tables_hold_the_same_rows_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Order lines and web events generated a key range at a time (as above scale 100) are
    the rows one statement writes, in the same order, and the build stays byte-identical."""
    from dabench.world.datasets import marketing, sales

    whole = build_world(7, 1, tmp_path / "whole")
    monkeypatch.setattr(sales, "ORDERS_PER_CHUNK", 400)  # 3 chunks of the 1,000 orders
    monkeypatch.setattr(marketing, "WEB_EVENTS_PER_CHUNK", 6_000)  # 3 chunks of 15,000
    chunked = build_world(7, 1, tmp_path / "chunked")
    again = build_world(7, 1, tmp_path / "again")
    assert chunked.files == again.files
    assert chunked.table_rows == whole.table_rows
    assert chunked.traps == whole.traps
    first, second = (
        _tables(tmp_path / "whole" / "warehouse.duckdb"),
        _tables(tmp_path / "chunked" / "warehouse.duckdb"),
    )
    assert sorted(first) == sorted(second)
    differing = [name for name in first if first[name] != second[name]]
    assert differing == []
