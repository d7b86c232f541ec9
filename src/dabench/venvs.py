"""Virtual environments for third-party tools, made with uv when it is there, else pip.

Standard library only: ``python3 -m dabench.world.semantic_stack`` runs it on the system
Python before any dabench venv exists. :class:`Installer` builds the commands for either
installer from the same arguments (the requirements, ``no_deps``, a ``--target`` directory,
the interpreter) and runs them; a failure raises :class:`InstallError` naming the command and
the tail of its output.

- uv (:func:`find_uv`: ``$DABENCH_UV``, else the ``uv`` Python package's binary, else ``uv``
  on ``PATH``): ``uv venv --python PY VENV`` then ``uv pip install --compile-bytecode
  --python VENV/bin/python``.
  The venv has no pip. uv reads none of pip's configuration (``pip.conf``, ``PIP_*``: extra
  indexes, find-links, constraints), so it is for pure PyPI installs only, never for
  anything that needs a pinned local wheel such as a CPU torch.
- pip (no uv, or ``DABENCH_UV=none``): ``PY -m venv VENV`` then ``VENV/bin/python -m pip
  install -q``.

Both compile the installed modules to bytecode (pip by default, uv with
``--compile-bytecode``): the same venv either way, and a server started many times under
``PYTHONDONTWRITEBYTECODE=1`` never recompiles its imports (postgres-mcp's took 7.6 s of CPU
without them, 4.5 s with).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dabench.errors import DabenchError

INSTALL_TIMEOUT_S = 1800.0
"""A safety net for one install command (a registry that does not answer)."""
NO_UV = "none"
"""``DABENCH_UV=none``: never use uv (python -m venv + pip)."""
TAIL_CHARS = 1500


class InstallError(DabenchError):
    """Creating a venv or installing into it failed (the message names the command and
    quotes the tail of its output)."""


def find_uv() -> str | None:
    """The uv binary to use, or None for pip: ``$DABENCH_UV`` when set (``none``: pip; a
    path that is not an executable file is an error), else the ``uv`` Python package's
    binary in this interpreter, else ``uv`` on ``PATH``."""
    chosen = os.environ.get("DABENCH_UV")
    if chosen is not None:
        if chosen == NO_UV:
            return None
        if not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
            raise InstallError(f"DABENCH_UV={chosen!r} is not an executable file (or {NO_UV!r})")
        return chosen
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found,unused-ignore]

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def default_python() -> str:
    """The interpreter a venv is made from when the caller names none: ``python3`` on
    ``PATH``, else this one."""
    return shutil.which("python3") or sys.executable


def _tail(output: str) -> str:
    lines = (line for line in output.splitlines() if not line.startswith("WARNING: Location"))
    return "\n".join(lines)[-TAIL_CHARS:]


def run_step(argv: Sequence[str], timeout_s: float = INSTALL_TIMEOUT_S) -> None:
    """Run one install command; :class:`InstallError` naming it when it fails or times out."""
    command = " ".join(argv)
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise InstallError(f"{command}: over {timeout_s:.0f}s (registry unreachable?)") from exc
    except OSError as exc:
        raise InstallError(f"{command}: cannot run it: {exc}") from exc
    if proc.returncode != 0:
        output = _tail(proc.stderr + proc.stdout)
        raise InstallError(f"{command} failed (exit {proc.returncode}):\n{output}")


@dataclass(frozen=True)
class Installer:
    """Which installer makes venvs: ``uv`` is its binary, or None for ``venv`` + pip."""

    uv: str | None

    @classmethod
    def detect(cls) -> Installer:
        """uv when :func:`find_uv` finds it, else pip."""
        return cls(uv=find_uv())

    @property
    def name(self) -> str:
        """``uv`` or ``pip`` (for logs)."""
        return "pip" if self.uv is None else "uv"

    def create_argv(self, venv: str, python: str) -> list[str]:
        """The command that creates an empty venv at ``venv`` from ``python``."""
        if self.uv is None:
            return [python, "-m", "venv", venv]
        # --no-python-downloads: a bare name such as python3.12 is a version request to uv,
        # which would otherwise download a Python instead of failing
        return [self.uv, "venv", "-q", "--no-python-downloads", "--python", python, venv]

    def install_argv(
        self,
        python: str,
        requirements: Sequence[str],
        *,
        no_deps: bool = False,
        target: str | None = None,
    ) -> list[str]:
        """The command that installs ``requirements`` for ``python`` (a venv's interpreter,
        or with ``target`` any interpreter: the packages go into that directory)."""
        if not requirements:
            raise InstallError("nothing to install: no requirements given")
        if self.uv is None:
            argv = [python, "-m", "pip", "install", "-q"]
        else:
            argv = [self.uv, "pip", "install", "-q", "--compile-bytecode", "--python", python]
        argv += ["--no-deps"] if no_deps else []
        argv += ["--target", target] if target is not None else []
        return [*argv, *requirements]

    def create_venv(
        self,
        venv: Path,
        requirements: Sequence[str],
        *,
        python: str | None = None,
        no_deps: bool = False,
        timeout_s: float = INSTALL_TIMEOUT_S,
    ) -> Path:
        """A new venv at ``venv`` (anything there is removed first) with ``requirements``;
        returns its interpreter."""
        shutil.rmtree(venv, ignore_errors=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        run_step(self.create_argv(str(venv), python or default_python()), timeout_s)
        venv_python = venv / "bin" / "python"
        self.install(venv_python, requirements, no_deps=no_deps, timeout_s=timeout_s)
        return venv_python

    def install(
        self,
        python: Path,
        requirements: Sequence[str],
        *,
        no_deps: bool = False,
        target: Path | None = None,
        timeout_s: float = INSTALL_TIMEOUT_S,
    ) -> None:
        """Install ``requirements`` into the venv of ``python`` (or into ``target``)."""
        argv = self.install_argv(
            str(python),
            requirements,
            no_deps=no_deps,
            target=None if target is None else str(target),
        )
        run_step(argv, timeout_s)
