"""The order of test files under pytest-xdist (``tests/conftest.py``; ``.ci/run`` runs pytest
with ``--dist loadfile --no-loadscope-reorder``, so this is the order work is handed out)."""

from __future__ import annotations

from typing import Protocol, TypeVar

FIRST = ("tests/harness/test_semantic_layer.py",)
"""Files handed out first: they wait on installs ``.ci/run`` starts before pytest, so one
worker waits for those while the other runs the rest (last, they would lengthen the run)."""


class _Item(Protocol):
    nodeid: str


ItemT = TypeVar("ItemT", bound=_Item)


def files_first(items: list[ItemT], first: tuple[str, ...] = FIRST) -> None:
    """Group ``items`` by file, ``first`` files ahead, then by test count, largest first
    (stable: the order xdist's ``--loadscope-reorder`` gives)."""
    files: dict[str, list[ItemT]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    order = sorted(files, key=lambda f: (f not in first, -len(files[f])))
    items[:] = [item for f in order for item in files[f]]
