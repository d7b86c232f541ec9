"""``dabench platform ...``: serve the reference platform, list the shipped profiles."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from dabench.defaults import DEFAULT_SQL_THREADS, POSTGRES_PREFIXES
from dabench.errors import UserInputError
from dabench.keepalive import SERVER_KEEP_ALIVE_S
from dabench.listing import stderr_console, stdout_console

app = typer.Typer(no_args_is_help=True)


@app.command("serve")
def serve(
    world: Path | None = typer.Option(
        None, "--world", metavar="DIR", help="A built world directory (default: the cache)."
    ),
    profile: str = typer.Option("a2", "--profile", help="a0|a1|a2|a3 or a profile YAML path."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address the HTTP server binds."),
    port: int = typer.Option(8765, "--port", min=0, max=65535, help="HTTP port (0: any free)."),
    transport: str = typer.Option("http", "--transport", help="http or stdio."),
    auth: Path | None = typer.Option(None, "--auth", help="Identities and admin keys (YAML)."),
    auth_fd: int | None = typer.Option(
        None,
        "--auth-fd",
        min=3,
        help="Read the --auth YAML from this inherited file descriptor (no key file path "
        "in argv; the harness passes its keys so).",
    ),
    state_dir: Path | None = typer.Option(
        None,
        "--state-dir",
        help="Audit and state SQLite files (default ./.dabench/platform/<profile>).",
    ),
    audit_dsn: str | None = typer.Option(
        None, "--audit-dsn", help="postgresql://... to keep audit and state in PostgreSQL."
    ),
    warehouse: str | None = typer.Option(
        None,
        "--warehouse",
        metavar="DSN",
        help="postgresql://... of a read-only role: serve SQL from the world loaded there "
        "(dabench world export --postgres) instead of the world's DuckDB file.",
    ),
    sql_threads: int = typer.Option(
        DEFAULT_SQL_THREADS,
        "--sql-threads",
        min=1,
        help="DuckDB threads per query (1: sessions run in parallel, each query on one).",
    ),
    keep_alive_s: float = typer.Option(
        SERVER_KEEP_ALIVE_S,
        "--keep-alive-s",
        min=0.001,
        help="Close keep-alive HTTP connections idle this many seconds.",
    ),
) -> None:
    """Serve the reference platform over MCP (streamable HTTP at /mcp, or stdio)."""
    from dabench.platform.admin.auth import DEV_AUTH, load_auth, read_auth_fd
    from dabench.platform.profile import load_profile
    from dabench.platform.service import PlatformService
    from dabench.platform.world_content import load_world_content

    if transport not in ("http", "stdio"):
        raise UserInputError(f"--transport must be http or stdio, got {transport!r}")
    if audit_dsn is not None and not audit_dsn.startswith(("postgresql://", "postgres://")):
        raise UserInputError("--audit-dsn must be a postgresql:// URL")
    if warehouse is not None and not warehouse.startswith(POSTGRES_PREFIXES):
        raise UserInputError("--warehouse must be a postgresql:// URL")
    if auth is not None and auth_fd is not None:
        raise UserInputError("give --auth or --auth-fd, not both")
    prof = load_profile(profile)
    auth_config = DEV_AUTH
    if auth is not None:
        auth_config = load_auth(auth)
    elif auth_fd is not None:
        auth_config = read_auth_fd(auth_fd)
    dev_keys = auth is None and auth_fd is None
    if world is None:
        from dabench.world.cache import default_world

        world = default_world()
    content = load_world_content(world)
    service = PlatformService(
        content,
        prof,
        auth_config,
        state_dir if state_dir is not None else Path.cwd() / ".dabench" / "platform" / prof.name,
        audit_dsn=audit_dsn,
        sql_threads=sql_threads,
        warehouse_dsn=warehouse,
    )
    err = stderr_console()
    if dev_keys:
        err.print(
            "[yellow]no --auth: dev keys[/] teacher=dev-teacher-key learner=dev-learner-key "
            "reviewer=dev-reviewer-key admin=dev-admin-key"
        )
    if transport == "stdio":
        from dabench.platform.stdio import serve_stdio, stdio_identity

        serve_stdio(service, stdio_identity(auth_config, dev_default=dev_keys))
        return
    from dabench.platform.app import bind_http_socket, serve_http

    sock = bind_http_socket(host, port)  # port 0: the free port it got is the one printed
    bound = sock.getsockname()[1]
    err.print(
        f"dabench platform [bold]{prof.name}[/] on http://{host}:{bound}/mcp "
        f"(admin API /api/v1/admin, health /healthz)"
    )
    sys.stderr.flush()
    serve_http(service, host, bound, keep_alive_s, sock=sock)


@app.command("pg-role")
def pg_role(
    world: Path | None = typer.Option(
        None,
        "--world",
        metavar="DIR",
        help="The world exported to the database (default: the cache).",
    ),
    admin_dsn: str = typer.Option(
        ..., "--admin-dsn", help="postgresql://... of a role that may create roles and grant."
    ),
    role: str = typer.Option("dabench_reader", "--role", help="The read-only role's name."),
    password: str | None = typer.Option(
        None, "--password", help="Its password (LOGIN); omit for trust/peer authentication."
    ),
) -> None:
    """Create (or re-grant) a SELECT-only login role for `platform serve --warehouse`."""
    from dabench.platform.world_content import load_world_content
    from dabench.world.cache import default_world
    from dabench.world.postgres_roles import create_read_only_role

    content = load_world_content(world or default_world())
    tables = [ds.id for ds in content.catalog.datasets]
    create_read_only_role(admin_dsn, role, tables, password=password)
    stdout_console().print(
        f"role {role}: SELECT on {len(tables)} world tables, nothing else; serve with "
        f"--warehouse postgresql://{role}@HOST:PORT/DB",
        markup=False,
        highlight=False,
    )


@app.command("profiles")
def profiles() -> None:
    """List the shipped profiles and the tools each persona sees."""
    from dabench.platform.profile import SHIPPED_PROFILES, load_profile

    console = stdout_console()
    for name in SHIPPED_PROFILES:
        prof = load_profile(name)
        flags = ", ".join(
            f"{label} {'on' if on else 'off'}"
            for label, on in (
                ("enrichment", prof.enrichment.enabled),
                ("search gate", prof.gate.search_first),
                ("memory", prof.memory.enabled),
            )
        )
        console.print(f"[bold]{name}[/]  {prof.profile_hash[:12]}  {flags}", soft_wrap=True)
        for persona in sorted(prof.personas):
            tools = ", ".join(prof.tools_for(persona))
            console.print(f"  {persona}: {tools}", soft_wrap=True, highlight=False)
