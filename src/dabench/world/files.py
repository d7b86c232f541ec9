"""Hashing and canonical JSON for the files of a world."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel

CHUNK = 1 << 20

WAREHOUSE_FILE = "warehouse.duckdb"
CATALOG_FILE = "catalog.json"
MANIFEST_FILE = "world.json"
KNOWLEDGE_DIR = "knowledge"
POLICIES_FILE = "policies.yaml"
UNHASHED = (MANIFEST_FILE, POLICIES_FILE)
"""Files of a built world outside ``files`` and ``world_hash``: the manifest itself, and the
policies as data (added to built worlds after their hashes were published; the manifest
records their SHA-256 apart, in ``policies_sha256``, so ``world verify`` still checks them)."""


def sha256_file(path: Path) -> str:
    """SHA-256 hex digest of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def hash_tree(root: Path, *, exclude: tuple[str, ...] = ("world.json",)) -> dict[str, str]:
    """Relative POSIX path -> SHA-256 of every file under ``root`` (sorted by path)."""
    files = sorted(p for p in root.rglob("*") if p.is_file())
    result = {}
    for path in files:
        rel = path.relative_to(root).as_posix()
        if rel not in exclude:
            result[rel] = sha256_file(path)
    return result


def world_hash(files: dict[str, str]) -> str:
    """SHA-256 over the sorted ``path:sha`` lines of ``files``."""
    text = "".join(f"{path}:{sha}\n" for path, sha in sorted(files.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def canonical_json(model: BaseModel) -> str:
    """Stable JSON for a record: sorted keys, two-space indent, trailing newline."""
    data = model.model_dump(mode="json")
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
