"""docs/world.md names every dataset and every trap of the world, and every knowledge page
but the everyday ones (named by kind)."""

from __future__ import annotations

from pathlib import Path

from dabench.world import World
from dabench.world.knowledge_bulk import bulk_pages
from dabench.world.markdown import datasets_table, traps_table

DOC = Path(__file__).resolve().parents[2] / "docs" / "world.md"


def test_doc_lists_every_dataset_trap_and_page(world: World) -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [d.id for d in world.catalog.datasets if f"`{d.id}`" not in text]
    missing += [t.id for t in world.traps if f"`{t.id}`" not in text]
    everyday = {p.id for p in bulk_pages()}  # listed by kind, not one by one
    missing += [p.id for p in world.pages if p.id not in everyday and f"`{p.id}`" not in text]
    missing += [g.id for g in world.catalog.glossary if f"`{g.id}`" not in text]
    missing += [q.id for q in world.catalog.curated_queries if f"`{q.id}`" not in text]
    assert missing == [], f"docs/world.md does not mention: {missing}"


def test_doc_tables_are_current(world: World) -> None:
    text = DOC.read_text(encoding="utf-8")
    hint = "regenerate with: dabench world info DIR --markdown (seed 930, scale 1)"
    assert datasets_table(world) in text, hint
    assert traps_table(world) in text, hint
