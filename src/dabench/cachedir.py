"""Where dabench caches what it builds (worlds, installs, compiled report templates).

A module of its own with no dabench imports, so that a light caller (the report's template
cache) does not load the sandbox machinery to find the folder.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The dabench cache (``$DABENCH_CACHE`` or ``~/.cache/dabench``; worlds live there)."""
    base = os.environ.get("DABENCH_CACHE")
    return Path(base).resolve() if base else (Path.home() / ".cache" / "dabench").resolve()
