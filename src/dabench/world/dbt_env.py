"""The dbt + MetricFlow toolchain in its own virtual environment (never a dabench dependency).

:func:`dbt_venv` installs ``dbt-core<1.12`` (1.12 downloads a binary while installing),
``dbt-duckdb``, ``dbt-metricflow`` and ``metricflow`` from PyPI into
``$DABENCH_CACHE/dbt-venv`` once (a lock file serialises parallel installers) and returns
its directory; later calls reuse it (uv installs it when it is there, else pip:
:mod:`dabench.venvs`). :func:`dbt_build` builds an exported project with it. The same recipe
by hand::

    python3 -m venv venvs/dbt
    venvs/dbt/bin/pip install 'dbt-core<1.12' dbt-duckdb dbt-metricflow metricflow

or, with uv, ``uv venv venvs/dbt`` and ``uv pip install --python venvs/dbt/bin/python ...``.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

from dabench.cachedir import cache_root
from dabench.errors import DabenchError
from dabench.venvs import Installer, InstallError

DBT_PACKAGES = ("dbt-core<1.12", "dbt-duckdb", "dbt-postgres", "dbt-metricflow", "metricflow")
"""What the dbt venv holds (unpinned above the dbt-core bound: the newest that installs)."""
INSTALL_TIMEOUT_S = 900


class DbtToolError(DabenchError):
    """Installing or running dbt/MetricFlow failed (the message quotes its output)."""


def install_venv(venv: Path, packages: tuple[str, ...]) -> Path:
    """A venv at ``venv`` with ``packages`` (created once, with uv when it is there, else
    venv + pip: :mod:`dabench.venvs`; a ``.ok`` marker naming the packages says complete, so
    a changed package list reinstalls)."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    with (venv.parent / f".{venv.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = venv / ".ok"
        if marker.exists() and marker.read_text().split() == list(packages):
            return venv
        try:
            Installer.detect().create_venv(venv, packages, timeout_s=INSTALL_TIMEOUT_S)
        except InstallError as exc:
            raise DbtToolError(str(exc)) from exc
        marker.write_text(" ".join(packages) + "\n")
    return venv


SEMANTIC_VENV_DIR = "semantic-venv"
"""The semantic stack's venv under its base (:mod:`dabench.world.semantic_stack`)."""


def _installed_with(venv: Path, packages: tuple[str, ...]) -> bool:
    marker = venv / ".ok"
    return marker.is_file() and set(packages) <= set(marker.read_text().split())


def dbt_venv() -> Path:
    """The dbt + MetricFlow venv under the cache (installed on first use); the semantic
    stack's venv instead when it is installed under the same cache (it holds every package
    of this one)."""
    semantic = cache_root() / SEMANTIC_VENV_DIR
    if _installed_with(semantic, DBT_PACKAGES):
        return semantic
    return install_venv(cache_root() / "dbt-venv", DBT_PACKAGES)


def run_dbt(project: Path, *args: str, venv: Path | None = None) -> str:
    """``dbt ARGS`` in ``project`` with its own profiles.yml; the output (raises on failure)."""
    binary = (venv or dbt_venv()) / "bin" / "dbt"
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DO_NOT_TRACK": "1"}
    argv = [str(binary), *args, "--project-dir", str(project), "--profiles-dir", str(project)]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=project, env=env)
    if proc.returncode != 0:
        raise DbtToolError(f"dbt {' '.join(args)} failed:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc.stdout


def dbt_build(project: Path, *, venv: Path | None = None) -> str:
    """``dbt build --target build`` (marts and time spine), then ``dbt parse`` on the
    read-only target so the manifest servers load points at it; the build's output."""
    out = run_dbt(project, "build", "--target", "build", venv=venv)
    run_dbt(project, "parse", venv=venv)
    return out


MCP_METRICFLOW_PACKAGES = (
    "mcp-metricflow==1.0.0", "mcp<2", "dbt-core<1.12", "dbt-duckdb", "dbt-metricflow",
)  # fmt: skip
"""mcp-metricflow's own venv: 1.0.0 breaks on mcp 2 (FastMCP moved), and its dbt must stay
below 1.12 like the project's."""
SEMANTIC_PACKAGES = (*DBT_PACKAGES, *(p for p in MCP_METRICFLOW_PACKAGES if p not in DBT_PACKAGES))
"""One venv for both: the dbt + MetricFlow toolchain and mcp-metricflow (its pins admit
``metricflow``; the tests and CI install this one, ``dabench.world.semantic_stack``)."""
