"""``load_world``: read a built world directory into a :class:`World`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import duckdb
from pydantic import ValidationError

from dabench.errors import DabenchError, UserInputError
from dabench.world.files import (
    CATALOG_FILE,
    KNOWLEDGE_DIR,
    MANIFEST_FILE,
    POLICIES_FILE,
    UNHASHED,
    WAREHOUSE_FILE,
    hash_tree,
    sha256_file,
    world_hash,
)
from dabench.world.knowledge import parse_page
from dabench.world.model import Catalog, DatasetMeta, KnowledgePage, Trap, WorldManifest
from dabench.world.warehouse import connect_warehouse

M = TypeVar("M", WorldManifest, Catalog)


class WorldIntegrityError(DabenchError):
    """The files of a world do not match the hashes in its ``world.json``."""


@dataclass(frozen=True)
class World:
    """A built world loaded from disk: manifest, catalog and knowledge pages."""

    path: Path
    manifest: WorldManifest
    catalog: Catalog
    pages: list[KnowledgePage]
    _datasets: dict[str, DatasetMeta] = field(repr=False, compare=False)
    _pages: dict[str, KnowledgePage] = field(repr=False, compare=False)

    @property
    def warehouse_path(self) -> Path:
        """Path of ``warehouse.duckdb``."""
        return self.path / WAREHOUSE_FILE

    @property
    def world_hash(self) -> str:
        """The world's identity (from ``world.json``)."""
        return self.manifest.world_hash

    @property
    def traps(self) -> list[Trap]:
        """The planted traps with their answers."""
        return self.manifest.traps

    def dataset(self, dataset_id: str) -> DatasetMeta:
        """The catalog record of a dataset; ``KeyError`` naming the id if unknown."""
        try:
            return self._datasets[dataset_id]
        except KeyError:
            raise KeyError(f"no dataset {dataset_id!r} in world {self.path}") from None

    def page(self, page_id: str) -> KnowledgePage:
        """A knowledge page by id; ``KeyError`` naming the id if unknown."""
        try:
            return self._pages[page_id]
        except KeyError:
            raise KeyError(f"no knowledge page {page_id!r} in world {self.path}") from None

    def connect(self, *, read_only: bool = True) -> duckdb.DuckDBPyConnection:
        """An offline connection to the warehouse (see :func:`connect_warehouse`)."""
        return connect_warehouse(self.warehouse_path, read_only=read_only)


def load_world(path: Path, *, verify: bool = False) -> World:
    """Load the world in ``path``; ``verify=True`` re-hashes every file against world.json.

    Raises :class:`UserInputError` when the directory is not a valid world and
    :class:`WorldIntegrityError` when ``verify`` finds a mismatch.
    """
    path = Path(path)
    manifest = read_manifest(path)
    catalog = _read_model(path / CATALOG_FILE, Catalog)
    pages = []
    for page_file in sorted((path / KNOWLEDGE_DIR).glob("*.md")):
        try:
            pages.append(parse_page(page_file.read_text(encoding="utf-8"), str(page_file)))
        except (ValueError, ValidationError) as exc:
            raise UserInputError(f"{page_file}: invalid knowledge page: {exc}") from exc
    if not (path / WAREHOUSE_FILE).is_file():
        raise UserInputError(f"{path}: missing {WAREHOUSE_FILE}")
    if verify:
        problems = verify_files(path, manifest)
        if problems:
            raise WorldIntegrityError(f"{path}: " + "; ".join(problems))
    return World(
        path=path,
        manifest=manifest,
        catalog=catalog,
        pages=pages,
        _datasets={d.id: d for d in catalog.datasets},
        _pages={p.id: p for p in pages},
    )


def read_manifest(path: Path) -> WorldManifest:
    """The validated ``world.json`` of the world in ``path``."""
    return _read_model(Path(path) / MANIFEST_FILE, WorldManifest)


def verify_files(path: Path, manifest: WorldManifest) -> list[str]:
    """Every difference between the files in ``path`` and the manifest (empty when intact)."""
    actual = hash_tree(path, exclude=UNHASHED)
    problems = []
    for rel in sorted(set(manifest.files) | set(actual)):
        want, got = manifest.files.get(rel), actual.get(rel)
        if want is None:
            problems.append(f"unexpected file {rel}")
        elif got is None:
            problems.append(f"missing file {rel}")
        elif want != got:
            problems.append(f"{rel}: sha256 {got[:12]}... != {want[:12]}... in world.json")
    if manifest.policies_sha256 is not None:
        policies = path / POLICIES_FILE
        if not policies.is_file():
            problems.append(f"missing file {POLICIES_FILE}")
        elif sha256_file(policies) != manifest.policies_sha256:
            problems.append(f"{POLICIES_FILE}: sha256 differs from policies_sha256 in world.json")
    if world_hash(manifest.files) != manifest.world_hash:
        problems.append("world_hash does not match the file hashes in world.json")
    return problems


def _read_model(file: Path, model: type[M]) -> M:
    if not file.is_file():
        raise UserInputError(f"{file}: not found (is {file.parent} a built world?)")
    try:
        return model.model_validate(json.loads(file.read_text(encoding="utf-8")))
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{file}: line {exc.lineno}: invalid JSON: {exc.msg}") from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise UserInputError(f"{file}: field {loc}: {err['msg']}") from exc
