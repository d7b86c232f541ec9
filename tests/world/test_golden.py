"""The committed golden world hash: any change to the generator must be a conscious one."""

from __future__ import annotations

import duckdb
import pytest

from dabench.world import GENERATOR_VERSION, World

GOLDEN_WORLD_HASH = {
    # (generator version, duckdb version) -> world_hash of seed 930, scale 1
    ("2.7.0", "2.0.1"): "6a0ad3efe2260e687a32ac588b51ac13334bdb533460a9eb473f785c4bc12633",
}


def test_golden_world_hash(world: World) -> None:
    key = (GENERATOR_VERSION, duckdb.__version__)
    if key not in GOLDEN_WORLD_HASH:
        pytest.skip(
            f"no golden hash recorded for generator {key[0]} with DuckDB {key[1]}: "
            "the file format differs per DuckDB version; record one"
        )
    assert world.world_hash == GOLDEN_WORLD_HASH[key], (
        "The seed-930 world changed. If you changed the generator on purpose, bump "
        "GENERATOR_VERSION in src/dabench/world/constants.py and record the new hash here "
        f"(got {world.world_hash}); otherwise the change broke determinism."
    )
