"""ensure_world reuses its cache; load_world validates and verifies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dabench.errors import UserInputError
from dabench.world import WorldIntegrityError, ensure_world, load_world
from dabench.world.cache import cache_key, generator_fingerprint


def test_ensure_world_builds_once(world_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    # Seed the cache with a copy of the session world to keep the test fast.
    first_path = cache / cache_key(930, 1)
    shutil.copytree(world_dir, first_path)
    (cache / f".{first_path.name}.generator").write_text(generator_fingerprint())
    stamp = (first_path / "world.json").stat().st_mtime_ns
    assert ensure_world(930, 1, cache) == first_path
    assert (first_path / "world.json").stat().st_mtime_ns == stamp


def test_a_world_built_by_other_generator_code_is_rebuilt(world_dir: Path, tmp_path: Path) -> None:
    """Same generator version, other code (a development checkout): never reused."""
    cache = tmp_path / "cache"
    cache.mkdir()
    path = cache / cache_key(930, 1)
    shutil.copytree(world_dir, path)  # a valid world, but stamped by other code
    (cache / f".{path.name}.generator").write_text("0" * 64)
    before = (path / "world.json").stat().st_mtime_ns
    assert ensure_world(930, 1, cache) == path
    assert (path / "world.json").stat().st_mtime_ns != before  # rebuilt, not reused
    assert load_world(path).world_hash == load_world(world_dir).world_hash
    assert (cache / f".{path.name}.generator").read_text().strip() == generator_fingerprint()


def test_ensure_world_rebuilds_a_broken_entry(
    world_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    path = ensure_world(930, 1, cache)
    # A build says where it goes and, once done, how big it is (stderr, never stdout).
    out, err = capsys.readouterr()
    assert out == ""
    assert f"building world seed 930 scale 1 into {path} (first use; later runs reuse it)" in err
    size_mb = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6
    assert f": {size_mb:.0f} MB in {path}" in err
    (path / "world.json").write_text("{broken")
    again = ensure_world(930, 1, cache)
    assert load_world(again).world_hash == load_world(world_dir).world_hash


def test_load_world_lookups(world_dir: Path) -> None:
    world = load_world(world_dir)
    assert world.dataset("sales.orders").row_count == 1000
    assert world.page("fiscal-calendar").title == "Fiscal calendar"
    with pytest.raises(KeyError, match=r"sales\.nope"):
        world.dataset("sales.nope")
    with pytest.raises(KeyError, match="nope"):
        world.page("nope")


def test_load_world_errors(world_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(UserInputError, match="not found"):
        load_world(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(world_dir, copy)
    data = json.loads((copy / "world.json").read_text())
    del data["seed"]
    (copy / "world.json").write_text(json.dumps(data))
    with pytest.raises(UserInputError, match="field seed"):
        load_world(copy)


def test_verify_detects_changes(world_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(world_dir, copy)
    load_world(copy, verify=True)
    with (copy / "warehouse.duckdb").open("r+b") as fh:
        fh.seek(5000)
        fh.write(b"\x00\x01")
    (copy / "extra.txt").write_text("x")
    with pytest.raises(
        WorldIntegrityError, match=r"unexpected file extra\.txt; warehouse\.duckdb: sha256"
    ):
        load_world(copy, verify=True)


def test_verify_checks_the_policies_outside_the_hash(world_dir: Path, tmp_path: Path) -> None:
    """``policies.yaml`` is not in ``world_hash`` (so adding it kept every hash) but its own
    SHA-256 in world.json is verified; a world built before it must be rebuilt to open."""
    from dabench.world.source import open_world

    copy = tmp_path / "copy"
    shutil.copytree(world_dir, copy)
    policies = copy / "policies.yaml"
    policies.write_text(policies.read_text() + "# edited\n")
    with pytest.raises(WorldIntegrityError, match=r"policies\.yaml: sha256 differs"):
        load_world(copy, verify=True)
    policies.unlink()
    with pytest.raises(WorldIntegrityError, match=r"missing file policies\.yaml"):
        load_world(copy, verify=True)
    manifest = json.loads((copy / "world.json").read_text())
    manifest["policies_sha256"] = None
    (copy / "world.json").write_text(json.dumps(manifest))
    load_world(copy, verify=True)  # an older world: intact, same hash
    with pytest.raises(UserInputError, match=r"built by an older dabench.*--force"):
        open_world(copy)
