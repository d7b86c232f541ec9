"""``dabench world ...`` commands: build, info, verify."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import ParamSpec, TypeVar

import typer

from dabench.errors import DabenchError, UserInputError
from dabench.listing import stderr_console, stdout_console
from dabench.world.export_command import export_command

app = typer.Typer(no_args_is_help=True)
_err = stderr_console()

P = ParamSpec("P")
R = TypeVar("R")


def _one_line_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Report a :class:`DabenchError` as ``error: <message>`` and exit with its code."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except DabenchError as exc:
            _err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None

    return wrapper


def _parse_int(flag: str, raw: str) -> int:
    try:
        return int(raw.strip(), 10)
    except ValueError:
        raise UserInputError(f"{flag} must be an integer, got {raw!r}") from None


@app.command()
@_one_line_errors
def build(
    seed: str = typer.Option("930", "--seed", help="Seed (integer >= 0)."),
    scale: str = typer.Option("1", "--scale", help="Scale factor 1..1000 for the fact tables."),
    out: Path = typer.Option(..., "--out", help="Output directory (must be empty or absent)."),
    force: bool = typer.Option(False, "--force", help="Replace a non-empty output directory."),
) -> None:
    """Build the deterministic world into OUT."""
    from dabench.world.build import build_world

    seed_value = _parse_int("--seed", seed)
    scale_value = _parse_int("--scale", scale)
    started = time.perf_counter()
    manifest = build_world(seed_value, scale_value, out, force=force, progress=True)
    elapsed = time.perf_counter() - started
    rows = sum(manifest.table_rows.values())
    stdout_console().print(
        f"built world seed={manifest.seed} scale={manifest.scale} in {elapsed:.1f}s: "
        f"{len(manifest.table_rows)} datasets, {rows:,} rows, {len(manifest.traps)} traps, "
        f"hash {manifest.world_hash[:16]} -> {out}",
        highlight=False,
        soft_wrap=True,
    )


@app.command()
@_one_line_errors
def info(
    path: Path | None = typer.Argument(
        None, help="A world directory, built or external (default: the cache).", show_default=False
    ),
    markdown: bool = typer.Option(False, "--markdown", help="Print markdown tables instead."),
) -> None:
    """Show a world's identity, datasets, traps (built: correct vs naive; external: the hidden
    rules) and policies."""
    from rich.table import Table

    from dabench.world.cache import default_world
    from dabench.world.load import read_manifest
    from dabench.world.markdown import datasets_table, policies_table, rules_table, traps_table
    from dabench.world.model import Trap
    from dabench.world.source import open_world

    path = path or default_world()
    world = open_world(path)
    traps = [t for t in world.traps if isinstance(t, Trap)]
    out = stdout_console()
    if markdown:
        hidden = traps_table(world) if world.builtin else rules_table(world.rules)
        typer.echo(
            datasets_table(world) + "\n" + hidden + "\n" + policies_table(world.policies),
            nl=False,
        )
        return
    if world.builtin:
        m = read_manifest(path)
        head = (
            f"world {path}: generator {m.generator_version}, seed {m.seed}, scale {m.scale}, "
            f"duckdb {m.duckdb_version}\nhash {m.world_hash}"
        )
    else:
        fp = world.fingerprint()
        assert fp is not None
        where = "(DSN)" if world.dsn else world.location
        head = (
            f"world {path}: external {world.source.engine} warehouse {where}, knowledge "
            f"{world.knowledge_dir}\nhash {world.world_hash} (data fingerprint {fp.hash[:12]}"
            + (f", snapshot {fp.snapshot_id}" if fp.snapshot_id else "")
            + ")"
        )
    out.print(head, highlight=False, soft_wrap=True)
    datasets = Table(title="datasets")
    datasets.add_column("id", no_wrap=True)
    for col in ("kind", "domain", "rows", "last loaded", "note"):
        datasets.add_column(col)
    for d in world.catalog.datasets:
        note = f"deprecated -> {d.replaced_by}" if d.deprecated else ""
        datasets.add_row(d.id, d.kind, d.domain, f"{d.row_count:,}", str(d.last_loaded), note)
    out.print(datasets)
    if traps:
        table = Table(title="traps")
        table.add_column("id", no_wrap=True)
        table.add_column("kind")
        table.add_column("correct", justify="right")
        table.add_column("naive", justify="right")
        for t in traps:
            kind = "control" if t.control else "hidden"
            table.add_row(t.id, kind, f"{t.correct_answer:,.2f}", f"{t.naive_answer:,.2f}")
        out.print(table)
    if world.rules:
        table = Table(title="hidden rules")
        for col in ("id", "kind", "class", "stated in"):
            table.add_column(col, no_wrap=col == "id")
        for r in world.rules:
            kind = f"{'control' if r.control else 'hidden'} ({r.kind})"
            table.add_row(r.id, kind, r.trap_class, ", ".join(r.fact_locations))
        out.print(table)
    policies = Table(title="policies")
    for col in ("id", "title", "page", "careless readings"):
        policies.add_column(col, no_wrap=col == "id")
    for p in world.policies:
        policies.add_row(p.id, p.title, p.page, str(len(p.ignored)))
    out.print(policies)


@app.command()
@_one_line_errors
def verify(
    path: Path | None = typer.Argument(
        None, help="A built world directory (default: the cache).", show_default=False
    ),
) -> None:
    """Re-hash every file of a world against its world.json; exit 1 on any mismatch.
    An external world (world.yaml): print its data fingerprint, computed in the engine."""
    from dabench.world.cache import default_world
    from dabench.world.load import read_manifest, verify_files
    from dabench.world.source import SOURCE_FILE, open_world

    path = path or default_world()
    if (path / SOURCE_FILE).is_file() and not (path / "world.json").is_file():
        world = open_world(path)
        fp = world.fingerprint()
        assert fp is not None
        out = stdout_console()
        for table, tf in sorted(fp.tables.items()):
            out.print(f"{table}  rows {tf.rows}  content {tf.content_hash}", highlight=False)
        out.print(
            f"ok: {len(fp.tables)} tables on {fp.engine}, data {fp.hash[:16]}, "
            f"world {world.world_hash[:16]}",
            highlight=False,
        )
        return
    manifest = read_manifest(path)
    problems = verify_files(path, manifest)
    if problems:
        for problem in problems:
            _err.print(f"mismatch: {problem}", markup=False, highlight=False)
        raise typer.Exit(1)
    stdout_console().print(
        f"ok: {len(manifest.files)} files match world {manifest.world_hash[:16]}",
        highlight=False,
    )


@app.command("init")
@_one_line_errors
def init(
    source: str = typer.Option(
        ...,
        "--from",
        metavar="FILE|DIR|DSN",
        help="A DuckDB file, a directory of <schema>/<table>.parquet, or a postgresql:// DSN.",
    ),
    out: Path = typer.Option(..., "--out", help="The knowledge directory to write."),
    force: bool = typer.Option(False, "--force", help="Write into a non-empty directory."),
) -> None:
    """Introspect a warehouse and write a knowledge-directory skeleton (an external world)."""
    from dabench.redaction import without_password
    from dabench.world.init import init_world

    catalog = init_world(source, out, force=force)
    columns = sum(len(d.columns) for d in catalog.datasets)
    console = stdout_console()
    console.print(
        f"wrote {out}: {len(catalog.datasets)} tables, {columns} columns; fill in the "
        "descriptions, pages, policies.yaml and rules.yaml (docs/own-data.md)",
        highlight=False,
        soft_wrap=True,
    )
    if without_password(source) != source:
        console.print(
            "world.yaml holds the DSN without its password: give it through PGPASSWORD or "
            "~/.pgpass",
            highlight=False,
            soft_wrap=True,
        )


app.command("export")(_one_line_errors(export_command))

dbt_mcp_app = typer.Typer(no_args_is_help=True)
app.add_typer(
    dbt_mcp_app, name="dbt-mcp", help="dbt-mcp (Python 3.13 in a Debian root) over a dbt export."
)


@dbt_mcp_app.command("install")
@_one_line_errors
def dbt_mcp_install() -> None:
    """Install dbt-mcp into a Debian trixie root under the cache (once; needs root)."""
    from dabench.world.dbt_env import dbt_venv
    from dabench.world.dbt_mcp_env import install_dbt_mcp

    started = time.perf_counter()
    root = install_dbt_mcp(dbt_venv())
    elapsed = time.perf_counter() - started
    stdout_console().print(f"dbt-mcp ready in {root} ({elapsed:.1f}s)", highlight=False)


@dbt_mcp_app.command("serve")
@_one_line_errors
def dbt_mcp_serve(
    project: Path = typer.Option(
        ..., "--project", envvar="DBT_PROJECT_DIR", help="The dbt project (world export --dbt)."
    ),
) -> None:
    """Serve PROJECT with dbt-mcp over stdio, read-only, in a bubblewrap sandbox (installed
    by `dabench world dbt-mcp install` under the same DABENCH_CACHE)."""
    import os

    from dabench.world.dbt_mcp_env import dbt_mcp_command

    argv = dbt_mcp_command(project)
    os.execvp(argv[0], argv)
