"""Load what the platform serves from a world directory (built-in or external)."""

from __future__ import annotations

from pathlib import Path

from dabench.errors import UserInputError
from dabench.platform.service import WorldContent
from dabench.world.source import open_world


def load_world_content(path: Path) -> WorldContent:
    """The catalog, pages, warehouse and world hash of the world at ``path``: a built world
    (``world.json``) or an external one (``world.yaml``), through the same loader."""
    if not path.is_dir():
        raise UserInputError(f"--world {path}: not a directory (run: dabench world build)")
    world = open_world(path)
    dsn = world.dsn
    return WorldContent(
        catalog=world.catalog,
        pages=list(world.pages),
        warehouse_path=world.warehouse_path if dsn is None else path,
        world_hash=world.world_hash,
        warehouse_dsn=dsn,
    )
