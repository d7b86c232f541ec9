"""The ``dabench`` command line: one typer app that mounts each package's commands.

Each package owns its commands in ``<package>/commands.py``; this module only wires them
together so that no package needs to import another's CLI.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperArgument, TyperOption

from dabench import __version__
from dabench.errors import DabenchError, unwritable_message
from dabench.grading import commands as grading_commands
from dabench.judge import commands as judge_commands
from dabench.platform import commands as platform_commands
from dabench.play import commands as play_commands
from dabench.providers import commands as providers_commands
from dabench.report import commands as report_commands
from dabench.runner import commands as runner_commands
from dabench.runner import target_commands
from dabench.stats import commands as stats_commands
from dabench.store import commands as store_commands
from dabench.tasks import commands as tasks_commands
from dabench.tasks.metric_parity_command import metric_parity_command
from dabench.validation.commands import validate_cmd
from dabench.world import commands as world_commands

_display_type_rich = TyperOption.display_type_rich
_argument_type_rich = TyperArgument.display_type_rich


_PLACEHOLDERS = {"str": "TEXT", "path": "PATH", "int": "INT", "float": "FLOAT", "bool": "BOOL"}


def placeholder(typer_type: str) -> str:
    """One metavar style: typer's ``<path>``, ``<int range>``, ``<list[str]>`` become ``PATH``,
    ``INT``, ``TEXT`` (as the explicit ``DIR``, ``URL``...); choices stay ``a|b|c``."""
    inner = typer_type.strip("<>").removesuffix(" range")
    if "|" in inner:
        return inner
    if inner.startswith("list[") and inner.endswith("]"):
        inner = inner[5:-1]
    return _PLACEHOLDERS.get(inner.lower(), inner.upper())


def _option_placeholder(self: TyperOption, ctx: Any) -> str | None:
    """The help's placeholder column of an option: nothing for an on/off flag (typer prints
    ``<bool>`` there, though a flag takes no value), else an upper-case :func:`placeholder`."""
    if self.is_flag and self.metavar is None:
        return None
    shown = _display_type_rich(self, ctx)
    return placeholder(shown) if shown is not None and shown.startswith("<") else shown


def _argument_placeholder(self: TyperArgument, ctx: Any) -> str | None:
    """An argument's placeholder in the same style as an option's."""
    shown = _argument_type_rich(self, ctx)
    return placeholder(shown) if shown is not None and shown.startswith("<") else shown


TyperOption.display_type_rich = _option_placeholder  # type: ignore[method-assign]
TyperArgument.display_type_rich = _argument_placeholder  # type: ignore[method-assign,assignment]

app = typer.Typer(
    name="dabench",
    help="A benchmark harness for data agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

app.add_typer(world_commands.app, name="world", help="Build and inspect the deterministic world.")
app.add_typer(platform_commands.app, name="platform", help="Serve the reference platform (MCP).")
tasks_commands.app.command("validate")(validate_cmd)
tasks_commands.app.command("metric-parity")(metric_parity_command)
app.add_typer(tasks_commands.app, name="tasks", help="Task schema, listing and the truth lock.")
app.command("run")(runner_commands.run)
app.add_typer(target_commands.app, name="target", help="Inspect an MCP server's tool roles.")
app.command("grade")(grading_commands.grade_cmd)
app.add_typer(judge_commands.app, name="judge", help="LLM judge calibration.")
app.add_typer(providers_commands.app, name="providers", help="LLM provider kinds, prices, ping.")
app.add_typer(
    play_commands.app, name="play", help="Play episodes as an external agent, step by step."
)
report_commands.register(app)  # report, compare, history
app.command("publish")(store_commands.publish_cmd)
app.command("plan")(stats_commands.plan_cmd)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"dabench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """dabench: run arms over task suites k times, grade, and compare with honest statistics."""


def main() -> None:
    """Entry point of the ``dabench`` console script."""
    try:
        app()
    except DabenchError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(exc.exit_code) from None
    except OSError as exc:  # a run directory on a read-only mount, a full disk
        message = unwritable_message(exc)
        if message is None:
            raise
        typer.echo(f"error: {message}", err=True)
        raise SystemExit(DabenchError.exit_code) from None


if __name__ == "__main__":
    main()
