"""--scale multiplies the fact tables linearly."""

from __future__ import annotations

from pathlib import Path

from dabench.world import World, build_world


def test_scale_two_doubles_the_facts(world: World, tmp_path: Path) -> None:
    two = build_world(930, 2, tmp_path / "s2").table_rows
    one = world.manifest.table_rows
    assert one["sales.orders"] == 1000
    assert two["sales.orders"] == 2 * one["sales.orders"]
    for fact in ("sales.order_lines", "marketing.web_events", "support.tickets"):
        assert 1.8 < two[fact] / one[fact] < 2.2, fact
    assert two["product.products"] == one["product.products"]
