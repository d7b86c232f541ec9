"""``ensure_world``: build a world once into a cache directory and reuse it."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import sys
import time
from pathlib import Path

from dabench.errors import UserInputError
from dabench.sandbox import cache_root
from dabench.world.build import build_world
from dabench.world.constants import DEFAULT_SEED, GENERATOR_VERSION
from dabench.world.files import MANIFEST_FILE
from dabench.world.load import load_world


@functools.cache
def generator_fingerprint() -> str:
    """SHA-256 of the world generator's source (every module of ``dabench.world``): a cached
    world built by other generator code under the same version number is rebuilt, not reused
    (a development checkout changes the code long before the version)."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_key(seed: int, scale: int) -> str:
    """Directory name of a cached world: generator version, seed and scale."""
    return f"world-v{GENERATOR_VERSION}-seed{seed}-scale{scale}"


def ensure_world(seed: int, scale: int, cache_dir: Path) -> Path:
    """Path of the world for (generator version, seed, scale) under ``cache_dir``.

    Builds it on first use; later calls reuse it after a cheap manifest check and a check
    that the same generator code built it (:func:`generator_fingerprint`, kept beside the
    world). A cached world that fails either check or fails to load is rebuilt. Concurrent
    callers are serialised by a lock file.
    """
    cache_dir = Path(cache_dir)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserInputError(f"world cache {cache_dir}: cannot create it: {exc}") from exc
    target = cache_dir / cache_key(seed, scale)
    stamp = cache_dir / f".{target.name}.generator"
    with (cache_dir / f".{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        same_code = stamp.is_file() and stamp.read_text().strip() == generator_fingerprint()
        if same_code and (target / MANIFEST_FILE).is_file():
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
        stamp.write_text(generator_fingerprint() + "\n", encoding="utf-8")
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


def world_cache_dir() -> Path:
    """``$DABENCH_CACHE/worlds`` or ``~/.cache/dabench/worlds``."""
    return cache_root() / "worlds"


def default_world(seed: int = DEFAULT_SEED, scale: int = 1) -> Path:
    """The seed-930, scale-1 world (or ``seed``/``scale``) from the world cache, built on
    first use: what every ``--world`` defaults to."""
    return ensure_world(seed, scale, world_cache_dir())
