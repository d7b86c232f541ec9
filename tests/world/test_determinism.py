"""Byte-identical worlds for the same seed, scale and generator version."""

from __future__ import annotations

from pathlib import Path

import pytest

from dabench.world import build_world, load_world
from dabench.world.files import hash_tree


def _all_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_second_build_is_byte_identical(world_dir: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    manifest = build_world(930, 1, again)
    first, second = _all_files(world_dir), _all_files(again)
    assert sorted(first) == sorted(second)
    differing = [name for name in first if first[name] != second[name]]
    assert differing == [], f"files differ between two builds: {differing}"
    assert manifest.world_hash == load_world(world_dir).world_hash


def test_other_seed_gives_other_world(world_dir: Path, tmp_path: Path) -> None:
    other = build_world(931, 1, tmp_path / "w931")
    assert other.world_hash != load_world(world_dir).world_hash
    assert (
        other.files["knowledge/revenue-policy.md"]
        == hash_tree(world_dir)["knowledge/revenue-policy.md"]
    )


def test_manifest_hashes_every_file(world_dir: Path) -> None:
    manifest = load_world(world_dir).manifest
    every = hash_tree(world_dir)
    # policies.yaml is hashed apart, outside world_hash (added without changing any hash)
    assert manifest.policies_sha256 == every.pop("policies.yaml")
    assert manifest.files == every
    assert {"warehouse.duckdb", "catalog.json"} <= set(manifest.files)
    assert "world.json" not in manifest.files
    assert manifest.seed == 930 and manifest.scale == 1


def test_pin_refuses_an_unknown_header(tmp_path: Path) -> None:
    from dabench.world.warehouse import pin_database_identifier

    bogus = tmp_path / "x.duckdb"
    bogus.write_bytes(b"\x00" * 4096)
    with pytest.raises(RuntimeError, match="expected header layout"):
        pin_database_identifier(bogus, "id")


def test_pin_is_idempotent_and_keeps_the_database_readable(world_dir: Path, tmp_path: Path) -> None:
    from dabench.world import GENERATOR_VERSION, connect_warehouse
    from dabench.world.files import sha256_file
    from dabench.world.warehouse import pin_database_identifier

    copy = tmp_path / "copy.duckdb"
    copy.write_bytes((world_dir / "warehouse.duckdb").read_bytes())
    before = sha256_file(copy)
    pin_database_identifier(copy, f"dabench-world/{GENERATOR_VERSION}/930/1")
    assert sha256_file(copy) == before
    con = connect_warehouse(copy)
    try:
        assert con.execute("SELECT count(*) FROM sales.orders").fetchone() == (1000,)
    finally:
        con.close()


def test_multi_row_group_tables_are_byte_identical(tmp_path: Path) -> None:
    """Scale 10 writes tables of more than one row group (web events): still byte-identical."""
    first = build_world(5, 10, tmp_path / "a")
    second = build_world(5, 10, tmp_path / "b")
    assert first.table_rows["marketing.web_events"] > 122_880  # more than one row group
    assert first.files == second.files
    assert (tmp_path / "a" / "warehouse.duckdb").read_bytes() == (
        tmp_path / "b" / "warehouse.duckdb"
    ).read_bytes()
