"""Load what the platform serves from a built world directory."""

from __future__ import annotations

from pathlib import Path

from dabench.errors import UserInputError
from dabench.platform.service import WorldContent
from dabench.world import load_world


def load_world_content(path: Path) -> WorldContent:
    """The catalog, pages, warehouse path and world hash of the world at ``path``."""
    if not path.is_dir():
        raise UserInputError(f"--world {path}: not a directory (run: dabench world build)")
    world = load_world(path)
    return WorldContent(
        catalog=world.catalog,
        pages=list(world.pages),
        warehouse_path=world.warehouse_path,
        world_hash=world.manifest.world_hash,
    )
