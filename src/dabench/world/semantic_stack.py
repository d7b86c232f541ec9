"""Every install the semantic-layer arms need, at once: ``python -m dabench.world.semantic_stack
DIR`` (standard library only, so CI starts it on the system Python before its own venv exists).

Two chains run side by side, each step a call of the same installer a test or a user makes
(same lock, same marker), so a test that asks for an install while this runs waits for it and
then finds it done:

- ``DIR/semantic-venv``: dbt + MetricFlow and mcp-metricflow in one venv
  (:data:`~dabench.world.dbt_env.SEMANTIC_PACKAGES`, :func:`~dabench.world.dbt_env.install_venv`);
- ``DIR/dbt-mcp``: the Debian root (:func:`~dabench.world.dbt_mcp_env.install_root`), then,
  once the venv above is done, dbt-mcp's venv in it with the same DuckDB
  (:func:`~dabench.world.dbt_mcp_env.install_dbt_mcp`).

The venvs are made with uv when it is there (``$DABENCH_UV``, which .ci/run sets, or ``uv``
on ``PATH``), else venv + pip (:mod:`dabench.venvs`); the log's first line says which. Each
step's start, end and duration are printed (the CI log); a failed step is printed with its
error and the command exits 1.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from dabench.venvs import Installer, InstallError
from dabench.world.dbt_env import SEMANTIC_PACKAGES, SEMANTIC_VENV_DIR, install_venv
from dabench.world.dbt_mcp_env import install_dbt_mcp, install_root

VENV_DIR = SEMANTIC_VENV_DIR
DBT_MCP_DIR = "dbt-mcp"
STEPS = ("semantic-venv", "dbt-mcp-root", "dbt-mcp-venv")
"""The steps' names in the log: ``semantic-stack: HH:MM:SS STEP started|done|FAILED ...``."""
T = TypeVar("T")


@dataclass(frozen=True)
class Stack:
    """Where the installed stack is: the shared venv and dbt-mcp's install directory."""

    venv: Path
    dbt_mcp: Path


def stack_paths(base: Path) -> Stack:
    """The stack's directories under ``base`` (installed or not)."""
    return Stack(venv=base / VENV_DIR, dbt_mcp=base / DBT_MCP_DIR)


def install_semantic_venv(base: Path) -> Path:
    """The shared dbt + MetricFlow + mcp-metricflow venv under ``base`` (installed once)."""
    return install_venv(stack_paths(base).venv, SEMANTIC_PACKAGES)


def _log(name: str, what: str) -> None:
    print(f"semantic-stack: {time.strftime('%H:%M:%S')} {name} {what}", flush=True)


def _timed(name: str, step: Callable[[], T]) -> T:
    started = time.monotonic()
    _log(name, "started")
    try:
        result = step()
    except Exception as exc:
        _log(name, f"FAILED after {time.monotonic() - started:.0f}s: {exc}")
        raise
    _log(name, f"done in {time.monotonic() - started:.0f}s")
    return result


def step_outcome(log: str, step: str) -> str | None:
    """``done`` or ``FAILED`` when the log says so of ``step``, else None (still running, or
    not reached)."""
    for line in log.splitlines():
        words = line.split()
        if words[:1] == ["semantic-stack:"] and words[2:4] in ([step, "done"], [step, "FAILED"]):
            return words[3]
    return None


def install_stack(base: Path) -> Stack:
    """Install both chains under ``base`` in parallel (see the module docstring); raises the
    first failure after both chains ended."""
    paths = stack_paths(base)
    with ThreadPoolExecutor(max_workers=2) as pool:
        venv: Future[Path] = pool.submit(_timed, STEPS[0], lambda: install_semantic_venv(base))

        def dbt_mcp() -> Path:
            _timed(STEPS[1], lambda: install_root(paths.dbt_mcp))
            try:
                dbt_venv = venv.result()
            except Exception:
                _log(STEPS[2], f"FAILED: {STEPS[0]} failed")
                raise
            return _timed(STEPS[2], lambda: install_dbt_mcp(dbt_venv, paths.dbt_mcp))

        root = pool.submit(dbt_mcp)
        for future in (venv, root):
            future.exception()  # both chains end before anything is raised
        venv.result()
        root.result()
    return paths


def main(argv: list[str]) -> int:
    """``python -m dabench.world.semantic_stack DIR``: install, print timings; 1 on failure."""
    if len(argv) != 1:
        print("usage: python -m dabench.world.semantic_stack DIR", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        installer = Installer.detect()
    except InstallError as exc:
        print(f"semantic-stack: {exc}", flush=True)
        return 1
    where = f" ({installer.uv})" if installer.uv else ""
    print(f"semantic-stack: venvs installed with {installer.name}{where}", flush=True)
    try:
        _timed("all", lambda: install_stack(Path(argv[0])))
    except Exception:
        print(f"semantic-stack: failed after {time.monotonic() - started:.0f}s", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
