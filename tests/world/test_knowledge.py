"""Knowledge pages: front matter, ids, and the topics the traps rely on."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dabench.world import World
from dabench.world.knowledge import parse_page


def test_pages_have_front_matter(world: World, world_dir: Path) -> None:
    files = sorted((world_dir / "knowledge").glob("*.md"))
    assert len(files) >= 8
    ids = {d.id for d in world.catalog.datasets}
    for f in files:
        text = f.read_text(encoding="utf-8")
        front = yaml.safe_load(text.split("---\n")[1])
        assert list(front) == ["id", "title", "tags", "related_datasets", "reviewed"], f.name
        assert front["id"] == f.stem
        assert set(front["related_datasets"]) <= ids, f.name
        assert front["title"] and front["tags"]
    assert {p.id for p in world.pages} >= {
        "revenue-policy",
        "fiscal-calendar",
        "warehouse-guide",
        "customer-tiers",
        "test-accounts",
        "data-freshness",
        "currency-policy",
        "event-data",
    }


def test_parse_page_errors_name_the_source() -> None:
    with pytest.raises(ValueError, match=r"x\.md: line 1"):
        parse_page("# no front matter\n", "x.md")
    with pytest.raises(ValueError, match="not closed"):
        parse_page("---\nid: a\n", "y.md")
