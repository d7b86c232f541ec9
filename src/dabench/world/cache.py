"""``ensure_world``: build a world once into a cache directory and reuse it."""

from __future__ import annotations

import fcntl
import sys
import time
from pathlib import Path

from dabench.errors import UserInputError
from dabench.world.build import MANIFEST_FILE, build_world
from dabench.world.constants import GENERATOR_VERSION
from dabench.world.load import load_world


def cache_key(seed: int, scale: int) -> str:
    """Directory name of a cached world: generator version, seed and scale."""
    return f"world-v{GENERATOR_VERSION}-seed{seed}-scale{scale}"


def ensure_world(seed: int, scale: int, cache_dir: Path) -> Path:
    """Path of the world for (generator version, seed, scale) under ``cache_dir``.

    Builds it on first use; later calls reuse it after a cheap manifest check. A cached
    world that fails to load is rebuilt. Concurrent callers are serialised by a lock file.
    """
    cache_dir = Path(cache_dir)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserInputError(f"world cache {cache_dir}: cannot create it: {exc}") from exc
    target = cache_dir / cache_key(seed, scale)
    with (cache_dir / f".{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / MANIFEST_FILE).is_file():
            try:
                manifest = load_world(target).manifest
                if (manifest.generator_version, manifest.seed, manifest.scale) == (
                    GENERATOR_VERSION,
                    seed,
                    scale,
                ):
                    return target
            except Exception:
                pass
        print(
            f"building world seed {seed} scale {scale} into {target} (first use; later runs "
            "reuse it)...",
            file=sys.stderr,
            flush=True,
        )
        started = time.perf_counter()
        build_world(seed, scale, target, force=True)
        print(
            f"world built in {time.perf_counter() - started:.1f} s: {_size_mb(target):.0f} MB "
            f"in {target}",
            file=sys.stderr,
            flush=True,
        )
    return target


def _size_mb(path: Path) -> float:
    """Size on disk of the files under ``path`` in MB (10^6 bytes)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6
