"""Load what the platform serves from a built world directory."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from dabench.errors import UserInputError
from dabench.platform.service import WorldContent


def load_world_content(path: Path) -> WorldContent:
    """The catalog, pages, warehouse path and world hash of the world at ``path``."""
    if not path.is_dir():
        raise UserInputError(f"--world {path}: not a directory (run: dabench world build)")
    load_world: Any = getattr(importlib.import_module("dabench.world"), "load_world")  # noqa: B009
    world = load_world(path)
    return WorldContent(
        catalog=world.catalog,
        pages=list(world.pages),
        warehouse_path=Path(world.warehouse_path),
        world_hash=world.manifest.world_hash,
    )
