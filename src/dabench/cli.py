"""The ``dabench`` command line: one typer app that mounts each package's commands.

Each package owns its commands in ``<package>/commands.py``; this module only wires them
together so that no package needs to import another's CLI.
"""

from __future__ import annotations

import typer

from dabench import __version__
from dabench.tasks import commands as tasks_commands
from dabench.world import commands as world_commands

app = typer.Typer(
    name="dabench",
    help="A benchmark harness for data agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

app.add_typer(world_commands.app, name="world", help="Build and inspect the deterministic world.")
app.add_typer(tasks_commands.app, name="tasks", help="Task schema, listing and the truth lock.")


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
    app()


if __name__ == "__main__":
    main()
