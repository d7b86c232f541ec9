"""``build_world``: generate a world into a temporary directory and move it into place."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import duckdb

from dabench.errors import UserInputError
from dabench.world.catalog import build_catalog, dataset_meta
from dabench.world.constants import GENERATOR_VERSION, MAX_SCALE, MAX_SEED
from dabench.world.datasets import DatasetSpec, Helper, Step, build_steps
from dabench.world.files import (
    CATALOG_FILE,
    KNOWLEDGE_DIR,
    MANIFEST_FILE,
    POLICIES_FILE,
    UNHASHED,
    WAREHOUSE_FILE,
    canonical_json,
    hash_tree,
    sha256_file,
    world_hash,
)
from dabench.world.knowledge import knowledge_pages, render_page
from dabench.world.model import Catalog, Trap, WorldManifest
from dabench.world.policies import POLICIES
from dabench.world.policy_data import dump_policies
from dabench.world.sqlrand import Rand
from dabench.world.traps import evaluate_traps
from dabench.world.warehouse import OFFLINE_CONFIG, pin_database_identifier

POLICIES_HEADER = (
    "The built-in world's analysis policies as data (dabench knowledge format version 1,\n"
    "docs/own-data.md), written by the generator from dabench.world.policies."
)

ProgressFn = Callable[[str, int, int], None]
"""Called with (label, step number, total steps) as the build advances."""


BUILD_MEMORY_LIMIT = "512MB"
"""Fixed DuckDB memory limit of the build. DuckDB sizes its write buffers from the memory
limit (by default 80% of the machine's RAM), and a different buffer size gives a different
block layout: a fixed limit keeps the file identical on machines with different RAM (limits
from 512 MB to 4 GB were checked to write the same bytes up to scale 100). It also bounds the
build's memory at every scale: what exceeds it is evicted (written blocks) or spills to
:data:`BUILD_TEMP_DIR` (sorts, joins, aggregates), so the peak RSS stays about the same from
scale 100 to 1000 (docs/scale.md)."""
BUILD_TEMP_DIR = f"{WAREHOUSE_FILE}.tmp"
"""DuckDB's spill directory during the build, inside the world's temporary build directory
(removed when the warehouse is complete)."""


def validate_request(seed: object, scale: object, out: Path, *, force: bool) -> None:
    """Reject a bad seed, scale or output directory with a one-line :class:`UserInputError`."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise UserInputError(f"--seed must be an integer from 0 to {MAX_SEED}, got {seed!r}")
    if isinstance(scale, bool) or not isinstance(scale, int) or not 1 <= scale <= MAX_SCALE:
        raise UserInputError(f"--scale must be an integer from 1 to {MAX_SCALE}, got {scale!r}")
    if out.exists() and not out.is_dir():
        raise UserInputError(f"--out {out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UserInputError(f"--out {out}: directory is not empty (use --force to replace it)")
    ancestor = _existing_ancestor(out.resolve().parent)
    if not ancestor.is_dir():
        raise UserInputError(f"--out {out}: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UserInputError(f"--out {out}: directory {ancestor} is not writable")


def _existing_ancestor(path: Path) -> Path:
    """``path`` or its closest ancestor that exists."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def build_world(
    seed: int,
    scale: int,
    out: Path,
    *,
    force: bool = False,
    progress: bool | ProgressFn = False,
) -> WorldManifest:
    """Build the world for (seed, scale) into ``out`` and return its manifest.

    The world is generated in a temporary directory next to ``out`` and renamed into place,
    so ``out`` never holds a half-written world; missing parent directories are created
    (and removed again if the build fails). ``progress`` is True for a rich progress bar
    or a callback. Raises :class:`UserInputError` for bad input.
    """
    out = Path(out)
    validate_request(seed, scale, out, force=force)
    parent = out.resolve().parent
    created = _first_missing(parent)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=parent))
    except OSError as exc:
        _remove_created(created)
        raise UserInputError(f"--out {out}: cannot create a directory in {parent}: {exc}") from exc
    try:
        if progress is True:
            manifest = _with_rich_progress(seed, scale, tmp)
        else:
            manifest = generate(seed, scale, tmp, progress or None)
        _move_into_place(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_created(created)
        raise
    return manifest


def _first_missing(path: Path) -> Path | None:
    """The outermost missing directory on the way to ``path`` (None if it exists)."""
    missing = None
    while not path.exists() and path != path.parent:
        missing, path = path, path.parent
    return missing


def _remove_created(created: Path | None) -> None:
    if created is not None:
        shutil.rmtree(created, ignore_errors=True)


def _with_rich_progress(seed: int, scale: int, tmp: Path) -> WorldManifest:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]world[/] {task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("starting", total=1)

        def report(label: str, done: int, total: int) -> None:
            bar.update(task, description=label, completed=done, total=total)

        return generate(seed, scale, tmp, report)


def _move_into_place(tmp: Path, out: Path) -> None:
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(out)


def generate(
    seed: int, scale: int, root: Path, progress: ProgressFn | None = None
) -> WorldManifest:
    """Write every file of the world into the existing empty directory ``root``."""
    steps = build_steps(Rand(seed), scale)
    total = len(steps) + 3
    done = 0

    def tick(label: str) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(label, done, total)

    warehouse = root / WAREHOUSE_FILE
    catalog, traps = _build_warehouse(warehouse, steps, tick)
    pin_database_identifier(warehouse, f"dabench-world/{GENERATOR_VERSION}/{seed}/{scale}")
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(root / BUILD_TEMP_DIR)
    (root / CATALOG_FILE).write_text(canonical_json(catalog), encoding="utf-8")
    knowledge = root / KNOWLEDGE_DIR
    knowledge.mkdir()
    for page in knowledge_pages():
        (knowledge / f"{page.id}.md").write_text(render_page(page), encoding="utf-8")
    (root / POLICIES_FILE).write_text(dump_policies(POLICIES, POLICIES_HEADER), encoding="utf-8")
    tick("knowledge pages")
    files = hash_tree(root, exclude=UNHASHED)
    manifest = WorldManifest(
        generator_version=GENERATOR_VERSION,
        seed=seed,
        scale=scale,
        files=files,
        world_hash=world_hash(files),
        traps=traps,
        table_rows={d.id: d.row_count for d in catalog.datasets},
        duckdb_version=duckdb.__version__,
        policies_sha256=sha256_file(root / POLICIES_FILE),
    )
    (root / MANIFEST_FILE).write_text(canonical_json(manifest), encoding="utf-8")
    tick("manifest")
    return manifest


def build_connection(path: Path) -> duckdb.DuckDBPyConnection:
    """The connection that writes a world's warehouse at ``path``: offline, one writer thread
    (a fixed block layout), memory bounded by :data:`BUILD_MEMORY_LIMIT` with spilling to
    :data:`BUILD_TEMP_DIR` beside the file."""
    config: dict[str, str | bool | int | float | list[str]] = {
        **OFFLINE_CONFIG,
        "threads": 1,
        "memory_limit": BUILD_MEMORY_LIMIT,
        "temp_directory": str(path.parent / BUILD_TEMP_DIR),
    }
    con = duckdb.connect(str(path), config=config)
    con.execute("SET enable_progress_bar = false")
    return con


def _build_warehouse(
    path: Path, steps: list[Step], tick: Callable[[str], None]
) -> tuple[Catalog, list[Trap]]:
    con = build_connection(path)
    try:
        specs: list[DatasetSpec] = []
        schemas: set[str] = set()
        for step in steps:
            if isinstance(step, Helper):
                con.execute(f"CREATE TEMP TABLE {step.name} AS {step.select}")
                tick(step.name)
                continue
            schema = step.id.split(".")[0]
            if schema not in schemas:
                con.execute(f"CREATE SCHEMA {schema}")
                schemas.add(schema)
            columns = ", ".join(step.columns)
            con.execute(
                f"CREATE TABLE {step.id} AS SELECT {columns} FROM ({step.select}) "
                f"ORDER BY {step.order_by}"
            )
            for chunk in step.more_chunks:
                con.execute(
                    f"INSERT INTO {step.id} SELECT {columns} FROM ({chunk}) "
                    f"ORDER BY {step.order_by}"
                )
            specs.append(step)
            tick(step.id)
        for step in steps:
            if isinstance(step, Helper):
                con.execute(f"DROP TABLE {step.name}")
        con.execute("CHECKPOINT")
        # The file is final: reads below may use every core without changing a byte.
        con.execute(f"SET threads = {os.cpu_count() or 1}")
        datasets = [dataset_meta(con, spec) for spec in specs]
        catalog = build_catalog(datasets, specs)
        traps = evaluate_traps(con)
        tick("traps")
    finally:
        con.close()
    return catalog, traps
