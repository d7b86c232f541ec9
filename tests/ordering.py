"""The order of test files under pytest-xdist (``tests/conftest.py``; ``.ci/run`` runs pytest
with ``--dist loadfile --no-loadscope-reorder``, so this is the order work is handed out)."""

from __future__ import annotations

from typing import Protocol, TypeVar

FIRST = ("tests/harness/test_semantic_layer.py",)
"""Files handed out first: they wait on installs ``.ci/run`` starts before pytest, so one
worker waits for those while the others run the rest (last, they would lengthen the run)."""

LONGEST = (
    "tests/benchmarks/test_quick.py",
    "tests/harness/test_ray_executor.py",
    "tests/harness/test_target_inspect.py",
    "tests/harness/test_isolation.py",
    "tests/harness/test_command_agent.py",
    "tests/harness/test_third_party.py",
    "tests/platform/test_search_minilm.py",
    "tests/suites/test_world_seeds.py",
    "tests/platform/test_platform_sql_security.py",
    "tests/platform/test_platform_pg_warehouse.py",
    "tests/harness/test_flights_example.py",
    "tests/harness/test_play.py",
    "tests/harness/test_four_servers.py",
    "tests/platform/test_admin_api_fuzz.py",
    "tests/platform/test_platform_query_limits.py",
)
"""The files that took longest in a quiet ``.ci/run`` (``--durations=0`` summed per file,
longest first), handed out next: a long file started last would finish alone while the
other workers sit idle. A file missing here only loses its place in the order."""


class _Item(Protocol):
    nodeid: str


ItemT = TypeVar("ItemT", bound=_Item)


def files_first(
    items: list[ItemT], first: tuple[str, ...] = FIRST, longest: tuple[str, ...] = LONGEST
) -> None:
    """Group ``items`` by file: ``first`` files ahead, then ``longest`` in its order, then the
    rest by test count, largest first (stable: the order xdist's ``--loadscope-reorder``
    gives)."""
    files: dict[str, list[ItemT]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    rank = {f: i for i, f in enumerate((*first, *longest))}

    def key(f: str) -> tuple[int, int]:
        return (rank.get(f, len(rank)), -len(files[f]))

    items[:] = [item for f in sorted(files, key=key) for item in files[f]]
