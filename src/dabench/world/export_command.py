"""``dabench world export``: the world into Elasticsearch, PostgreSQL, Parquet, an older
DuckDB file, a SQLite file or a dbt project (exactly one destination per call), with a
progress bar."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from dabench.errors import UserInputError
from dabench.listing import stdout_console
from dabench.world.constants import STORAGE_VERSIONS

if TYPE_CHECKING:
    from dabench.world.export_sql import ProgressFn, SqlExportSummary
    from dabench.world.load import World


def _with_progress(world: World, run: Callable[[ProgressFn], SqlExportSummary]) -> SqlExportSummary:
    """Run an SQL export under a rich progress bar over the world's rows. The bar appears with
    the first rows written, so an error found before (a bad DSN, an existing output) is printed
    alone."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    total = sum(d.row_count for d in world.catalog.datasets)
    bars = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=Console(stderr=True),
    )  # fmt: skip
    bar = bars.add_task("exporting", total=total)
    done: dict[str, int] = {}

    def hook(table: str, written: int) -> None:
        if not done:
            bars.start()
        done[table] = written
        bars.update(bar, completed=sum(done.values()), description=table)

    try:
        return run(hook)
    finally:
        bars.stop()


def export_command(
    world_dir: Path | None = typer.Option(
        None, "--world", metavar="DIR", help="A built world directory (default: the cache)."
    ),
    elasticsearch: str | None = typer.Option(
        None, "--elasticsearch", metavar="URL", help="Index into Elasticsearch at URL."
    ),
    postgres: str | None = typer.Option(
        None, "--postgres", metavar="DSN", help="Load into the PostgreSQL database at DSN."
    ),
    parquet: Path | None = typer.Option(
        None, "--parquet", metavar="DIR", help="Write one Parquet file per table into DIR."
    ),
    duckdb_file: Path | None = typer.Option(
        None, "--duckdb", metavar="FILE", help="Write a DuckDB file for older DuckDB readers."
    ),
    sqlite_file: Path | None = typer.Option(
        None,
        "--sqlite",
        metavar="FILE",
        help="Write a SQLite file (tables flattened to <schema>__<table>).",
    ),
    dbt: Path | None = typer.Option(
        None, "--dbt", metavar="DIR", help="Write a dbt project with MetricFlow metrics."
    ),
    warehouse: str | None = typer.Option(
        None,
        "--warehouse",
        metavar="FILE|DSN",
        help="With --dbt: the warehouse it reads: a DuckDB file (default: the world's) or a "
        "PostgreSQL DSN that `--postgres` loaded (marts built in its schema marts).",
    ),
    reader: str | None = typer.Option(
        None,
        "--reader",
        metavar="DSN",
        help="With --dbt --warehouse DSN: the SELECT-only login servers read through "
        "(default: role dabench_dbt_reader, created with the warehouse DSN).",
    ),
    storage_version: str = typer.Option(
        "v1.0.0",
        "--storage-version",
        metavar="vX.Y.Z",
        help=f"With --duckdb: the storage format ({', '.join(STORAGE_VERSIONS)}).",
    ),
    force: bool = typer.Option(
        False, "--force", help="With --parquet/--duckdb/--sqlite/--dbt: replace an existing output."
    ),
    api_key: str | None = typer.Option(
        None,
        "--api-key",
        envvar="ES_API_KEY",
        metavar="KEY",
        help="With --elasticsearch: API key (base64 id:key); env ES_API_KEY.",
    ),
    prefix: str = typer.Option(
        "dabench-", "--prefix", metavar="TEXT", help="With --elasticsearch: index name prefix."
    ),
    recreate: bool = typer.Option(
        False, "--recreate", help="With --elasticsearch: replace indices of another world."
    ),
    chunk_size: int = typer.Option(
        500, "--chunk-size", min=1, metavar="N", help="With --elasticsearch: docs per bulk request."
    ),
    datasets: list[str] | None = typer.Option(
        None,
        "--dataset",
        metavar="ID",
        help="With --elasticsearch: only this dataset (repeatable); default: all.",
    ),
    verify_certs: bool = typer.Option(
        True, "--verify-certs/--no-verify-certs", help="With --elasticsearch: check TLS."
    ),
) -> None:
    """Export the world (tables, catalog and knowledge) to another engine. Check an SQL export
    with: dabench tasks validate --warehouse DSN|FILE|DIR (recomputes every truth)."""
    from dabench.world.cache import default_world
    from dabench.world.export_sql import (
        export_duckdb,
        export_parquet,
        export_postgres,
        storage_version_number,
    )
    from dabench.world.load import load_world

    chosen = [
        o
        for o in (elasticsearch, postgres, parquet, duckdb_file, sqlite_file, dbt)
        if o is not None
    ]
    if len(chosen) != 1:
        raise UserInputError(
            "name exactly one destination: --elasticsearch URL, --postgres DSN, --parquet DIR, "
            "--duckdb FILE, --sqlite FILE or --dbt DIR"
        )
    if (warehouse is not None or reader is not None) and dbt is None:
        raise UserInputError("--warehouse and --reader go with --dbt DIR")
    world_dir = world_dir or default_world()
    if dbt is not None:
        from dabench.world.export_dbt import run_dbt_export

        run_dbt_export(load_world(world_dir), dbt, warehouse=warehouse, reader=reader, force=force)
        return
    if elasticsearch is not None:
        from dabench.world.export_elasticsearch import run_elasticsearch_export

        run_elasticsearch_export(
            world_dir, elasticsearch, api_key=api_key, prefix=prefix, recreate=recreate,
            chunk_size=chunk_size, datasets=datasets, verify_certs=verify_certs,
        )  # fmt: skip
        return
    world = load_world(world_dir)
    if postgres is not None:
        summary = _with_progress(world, lambda p: export_postgres(world, postgres, progress=p))
        check = postgres
    elif parquet is not None:
        summary = _with_progress(
            world, lambda p: export_parquet(world, parquet, force=force, progress=p)
        )
        check = str(parquet)
    elif sqlite_file is not None:
        from dabench.world.export_sqlite import export_sqlite

        summary = _with_progress(
            world, lambda p: export_sqlite(world, sqlite_file, force=force, progress=p)
        )
        check = str(sqlite_file)
    else:
        assert duckdb_file is not None
        summary = _with_progress(
            world,
            lambda p: export_duckdb(
                world, duckdb_file, storage_version=storage_version, force=force, progress=p
            ),
        )
        check = str(duckdb_file)
    keys = sum(1 for t in summary.tables if t.primary_key)
    extra = f", {keys} primary keys" if postgres is not None or sqlite_file else ""
    if sqlite_file is not None:
        extra += " (tables named <schema>__<table>)"
    if duckdb_file is not None:
        extra = (
            f", storage {storage_version} (header version {storage_version_number(duckdb_file)})"
        )
    stdout_console().print(
        f"exported world {summary.world_hash[:16]} to {summary.target}: "
        f"{len(summary.tables)} tables, {summary.rows:,} rows{extra} in {summary.elapsed_s:.1f}s\n"
        f"verify: dabench tasks validate --warehouse {check}",
        highlight=False,
        soft_wrap=True,
    )
