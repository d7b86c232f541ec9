"""``dabench target ...`` commands: inspect an MCP server and propose (and check) its role map."""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from dabench.errors import DabenchError, HarnessError, UserInputError
from dabench.listing import stderr_console, stdout_console
from dabench.redaction import redact

if TYPE_CHECKING:
    from dabench.providers.base import ToolSpec
    from dabench.roles import ToolRoles
    from dabench.runner.role_check import TaskCheck
    from dabench.targets.inspect import RoleProposal

app = typer.Typer(no_args_is_help=True)


def _headers(raw: list[str]) -> dict[str, str]:
    out = {}
    for item in raw:
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            raise UserInputError(f"--header {item!r}: expected NAME:VALUE")
        out[key.strip()] = value.strip()
    return out


_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def _env(raw: list[str]) -> dict[str, str]:
    out = {}
    for item in raw:
        m = _ASSIGNMENT.match(item)
        if m is None:
            raise UserInputError(f"--env {item!r}: expected NAME=VALUE")
        out[m.group(1)] = m.group(2)
    return out


def _target(
    command: str | None, args: list[str], url: str | None, headers: list[str], env: list[str]
) -> dict[str, Any]:
    words = shlex.split(command) if command else []
    words += args
    if bool(words) == bool(url):
        raise UserInputError(
            "give exactly one server: --command CMD (or -- CMD ARGS...) or --url URL"
        )
    if url:
        if env:
            raise UserInputError("--env applies to stdio servers only (-- CMD or --command)")
        return {"url": url, "headers": _headers(headers)}
    if headers:
        raise UserInputError("--header applies to --url servers only")
    variables = _env(env)
    if words and Path(words[0]).name == "env":  # `-- env K=V cmd`: the same as --env K=V
        words = words[1:]
        while words and (m := _ASSIGNMENT.match(words[0])) is not None:
            variables.setdefault(m.group(1), m.group(2))
            words = words[1:]
        if not words:
            raise UserInputError("-- env K=V ...: no command after the assignments")
    return {"command": words, "env": variables, "cwd": str(Path.cwd())}


def _source(target: dict[str, Any]) -> str:
    """The server as written into ``--out``: environment values as ``${NAME}`` references
    and URL passwords masked, so no secret or DSN reaches the file."""
    if target.get("url"):
        return redact(str(target["url"]))
    env = " ".join(f"{k}=${{{k}}}" for k in sorted(target.get("env") or {}))
    return (f"env {env} " if env else "") + redact(shlex.join(target["command"]))


def _read_roles(path: Path) -> ToolRoles:
    from dabench.roles import ToolRoles
    from dabench.safe_yaml import load_file

    try:
        return ToolRoles.model_validate(load_file(path))
    except ValueError as exc:
        raise UserInputError(f"{path}: not a role map (target.roles): {exc}") from exc


def _read_target_config(path: Path) -> dict[str, Any]:
    from dabench.safe_yaml import load_file

    data = load_file(path)
    if not isinstance(data, dict):
        raise UserInputError(f"{path}: expected a mapping of mcp target settings")
    fixed = {"kind", "roles", "command", "url", "headers"} & set(data)
    if fixed:
        raise UserInputError(
            f"{path}: {', '.join(sorted(fixed))} come from the command line, not --target-config"
        )
    return data


def _arguments(spec: ToolSpec) -> str:
    props = spec.input_schema.get("properties") or {}
    required = set(spec.input_schema.get("required") or [])
    parts = []
    for name, schema in props.items():
        kind = schema.get("type", "any") if isinstance(schema, dict) else "any"
        parts.append(f"{name}{'*' if name in required else ''}: {kind}")
    return ", ".join(parts) or "-"


def roles_yaml(proposal: RoleProposal, source: str, env: dict[str, str] | None = None) -> str:
    """The role map as YAML usable verbatim under ``target.roles``, with its provenance and
    the proposed target settings as comments (environment values as ``${NAME}``)."""
    import yaml

    from dabench.sqlresult.probe import PROBE_SQL

    lines = [f"# dabench target inspect {source}", "# use under target.roles"]
    lines += [f"# {role}: {why}" for role, why in proposal.reasons.items()]
    lines += [f"# NOTE {note}" for note in proposal.notes]
    if proposal.probe is not None:
        lines.append(f"# probe {PROBE_SQL!r}: {proposal.probe.read}")
    settings = dict(proposal.target)
    if env:
        settings["env"] = {k: f"${{{k}}}" for k in sorted(env)}
    if settings:
        lines.append("# target settings beside the map (export the variables first):")
        dumped = yaml.safe_dump(settings, sort_keys=False, default_flow_style=False)
        lines += [f"#   {line}" for line in dumped.splitlines()]
    body = yaml.safe_dump(proposal.roles.dump(), sort_keys=False) if proposal.roles.root else "{}\n"
    return "\n".join(lines) + "\n" + body


def _print_tools(console: Console, tools: list[ToolSpec]) -> None:
    from rich.table import Table

    table = Table(title=f"{len(tools)} tools (* required)")
    table.add_column("tool", style="bold")
    table.add_column("arguments")
    table.add_column("description")
    for spec in tools:
        table.add_row(spec.name, _arguments(spec), spec.description[:160])
    console.print(table)


def _print_checks(console: Console, checks: list[TaskCheck]) -> None:
    from rich.table import Table

    table = Table(title="oracle through the role map (smoke tasks)")
    table.add_column("task")
    table.add_column("result")
    table.add_column("read from the sql result")
    table.add_column("detail")
    for c in checks:
        mark = "[green]pass[/]" if c.passed else "[red]FAIL[/]"
        table.add_row(c.task_id, mark, "\n".join(c.read) or "-", c.detail[:200])
    console.print(table)


@app.command("inspect")
def inspect_cmd(
    args: list[str] = typer.Argument(None, help="The stdio server command after --."),
    command: str | None = typer.Option(
        None, "--command", help="A stdio server command line (shell words)."
    ),
    url: str | None = typer.Option(None, "--url", help="A streamable-HTTP MCP server URL."),
    header: list[str] = typer.Option(
        [], "--header", metavar="NAME:VALUE", help="HTTP header (repeatable; ${VAR} expanded)."
    ),
    env: list[str] = typer.Option(
        [],
        "--env",
        metavar="NAME=VALUE",
        help="Environment of a stdio server (repeatable); --out names it ${NAME}, never the value.",
    ),
    out: Path | None = typer.Option(None, "--out", help="Write the proposed role map (YAML)."),
    roles_file: Path | None = typer.Option(
        None, "--roles", help="Check this role map (YAML) instead of proposing one."
    ),
    check: bool = typer.Option(
        False, "--check", help="Run the oracle on the smoke tasks through the role map."
    ),
    world: Path | None = typer.Option(
        None, "--world", metavar="DIR", help="World the server serves (default: the cache)."
    ),
    target_config: Path | None = typer.Option(
        None,
        "--target-config",
        help="YAML of further mcp target settings for --check (session_argument, env...).",
    ),
    check_dir: Path | None = typer.Option(
        None, "--check-dir", help="Keep the check's run here (default: a temporary directory)."
    ),
    fmt: str = typer.Option("table", "--format", help="table or json."),
) -> None:
    """List an MCP server's tools, propose a role map (sql, search, describe, list, fetch),
    write it as YAML for target.roles, and with --check run the oracle through it.

    Exit codes: 0 done (and every checked task passed); 1 a checked task failed; 2 bad input;
    3 the server could not be reached or listed."""
    import asyncio

    from dabench.runner.role_check import check_roles
    from dabench.targets.inspect import RoleProposal, inspect_server
    from dabench.targets.mcp import expand_env
    from dabench.targets.mcp_connection import McpEndpoint

    err = stderr_console()
    try:
        if fmt not in ("table", "json"):
            raise UserInputError(f"--format must be table or json, got {fmt!r}")
        target = _target(command, list(args or []), url, header, env)
        extra = _read_target_config(target_config) if target_config is not None else {}
        world = world.resolve() if world is not None else None  # the caller's cwd, not the
        check_dir = check_dir.resolve() if check_dir is not None else None  # check's dir
        endpoint = McpEndpoint(
            url=target.get("url"),
            headers={k: expand_env(v) for k, v in target.get("headers", {}).items()},
            command=target.get("command", []),
            env=dict(target.get("env") or {}),
            cwd=target.get("cwd"),
        )
        tools, proposal = asyncio.run(inspect_server(endpoint))
        if roles_file is not None:
            proposal = RoleProposal(
                _read_roles(roles_file), {"all": f"from {roles_file}"}, [], proposal.target
            )
        text = roles_yaml(proposal, _source(target), target.get("env"))
        if out is not None:
            out.write_text(text)
        checks: list[TaskCheck] | None = None
        if check:
            checked = {**proposal.target, **target, **extra}
            checked["env"] = {**target.get("env", {}), **extra.get("env", {})}
            if check_dir is not None:
                checks = check_roles(checked, proposal.roles, check_dir, world)
            else:
                with tempfile.TemporaryDirectory(prefix="dabench-inspect-") as tmp:
                    checks = check_roles(checked, proposal.roles, Path(tmp), world)
    except (DabenchError, HarnessError) as exc:
        err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(exc.exit_code if isinstance(exc, DabenchError) else 3) from None
    console = stdout_console()
    if fmt == "json":
        body: dict[str, Any] = {
            "tools": [t.model_dump() for t in tools],
            "roles": proposal.roles.dump(),
            "reasons": proposal.reasons,
            "notes": proposal.notes,
            "target": proposal.target,
            "probe": None
            if proposal.probe is None
            else vars(proposal.probe)
            | {
                "adapter": proposal.probe.adapter.model_dump(exclude_none=True)
                if proposal.probe.adapter
                else None
            },
        }
        if checks is not None:
            body["check"] = [vars(c) for c in checks]
        typer.echo(json.dumps(body, indent=2))
    else:
        _print_tools(console, tools)
        console.print("proposed role map (target.roles):", style="bold")
        console.print(text, markup=False, highlight=False)
        if out is not None:
            console.print(f"wrote {out}")
        if checks is not None:
            _print_checks(console, checks)
    if checks is not None:
        failed = sum(not c.passed for c in checks)
        err.print(f"check: {len(checks) - failed} of {len(checks)} smoke tasks passed")
        if failed or not checks:
            raise typer.Exit(1)
