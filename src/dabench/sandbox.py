"""Running an agent program sealed from the answer key (``dabench.sandbox``).

Any agent that runs a subprocess (``command``, ``claude-cli``) runs it through a
:class:`Seal`: inside a bubblewrap sandbox (:mod:`dabench.isolation`) that shows it only
system directories, its runtime (``agent.sandbox.ro_binds``) and an empty working directory,
with its own ``/proc`` and a network that reaches only the platform (and, where allowed, a
model API through a proxy); or, with an explicit ``--unsealed``, directly (the manifest and
every report then carry :data:`UNSEALED_CAVEAT`). Either way :func:`run_sealed` runs it in a
fresh, empty temporary directory, with an environment built from nothing (not a copy of the
harness's) that names no dabench path, and kills its whole process group on timeout.
"Dabench paths" are the source tree or installation of the ``dabench`` package, the world
cache, and the run, experiment and world directories: the places where the suites (gold SQL),
``world.json`` and the truth lock live. ``PATH`` keeps only directories that lie outside them
and hold no ``dabench`` executable.

Unsealed, an agent program can read files by absolute path with the user's permissions and
``/proc`` of the harness (docs/harness.md, "Isolation").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dabench
from dabench.cachedir import cache_root as cache_root
from dabench.errors import UserInputError
from dabench.isolation import (
    INSIDE_WORKDIR,
    Sandbox,
    SandboxSettings,
    check_ro_binds,
    require_bwrap,
    sandbox,
)
from dabench.journal.records import TokenUsage

UNSEALED_CAVEAT = (
    "Unsealed run (--unsealed): agent programs ran without the bubblewrap sandbox and could "
    "read files by absolute path (the suites, the world) and /proc of the harness; their "
    "scores are not protected from answer-key leaks."
)
"""The caveat of the manifest and every report of a run whose agent programs ran unsealed."""

PASSED_THROUGH = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
"""Harness variables every agent process gets (locale and time zone, never paths)."""


def package_root() -> Path:
    """The directory holding the ``dabench`` package's source tree or installation (the
    repository root for a source checkout, else the package directory)."""
    pkg = Path(dabench.__file__).resolve().parent
    root = pkg.parent.parent if pkg.parent.name == "src" else pkg
    return root if (root / "pyproject.toml").exists() else pkg


def protected_paths(*extra: Path | None) -> list[Path]:
    """Every path an agent process must not be pointed at (an external world's directory
    brings its knowledge directory and its warehouse file or Parquet directory along)."""
    paths = [package_root(), cache_root()]
    for p in extra:
        if p is not None:
            paths.append(p.resolve())
            paths += _external_world_paths(p)
    return paths


def _external_world_paths(world_dir: Path) -> list[Path]:
    """The knowledge directory and warehouse location an external world's ``world.yaml``
    names (relative to the world directory); none for other directories."""
    import yaml

    spec_file = world_dir / "world.yaml"
    try:
        spec = yaml.safe_load(spec_file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return []
    if not isinstance(spec, dict):
        return []
    out = []
    for key in ("knowledge", "location"):
        value = spec.get(key)
        if isinstance(value, str) and "://" not in value:
            out.append((world_dir / value).resolve())
    return out


def _under(value: str, roots: Sequence[Path]) -> bool:
    try:
        path = Path(value).resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    return any(path == r or r in path.parents for r in roots)


def names_protected_path(value: str, roots: Sequence[Path]) -> bool:
    """Whether ``value`` (or one of its ``:``-separated parts) is, contains or lies inside a
    protected path."""
    parts = [p for p in value.split(os.pathsep) if p.startswith(("/", "~", "."))]
    return any(_under(os.path.expanduser(p), roots) for p in parts)


def sealed_path(roots: Sequence[Path]) -> str:
    """The harness's ``PATH`` without directories inside protected paths or holding a
    ``dabench`` executable (the harness's own virtualenv)."""
    keep: list[str] = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or names_protected_path(entry, roots):
            continue
        if shutil.which("dabench", path=entry) is not None:
            continue
        keep.append(entry)
    return os.pathsep.join(keep)


def sealed_env(
    workdir: Path,
    roots: Sequence[Path],
    *,
    inherit: Sequence[str] = (),
    extra: Mapping[str, str] | None = None,
    where: str = "agent",
) -> dict[str, str]:
    """An agent process's whole environment: a sealed ``PATH``, ``HOME`` and ``TMPDIR`` in its
    work directory, the locale, the harness variables named in ``inherit`` (API keys; ``HOME``
    to keep the real home), then ``extra``. A value that names a protected path is refused."""
    env = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
    env.update(PATH=sealed_path(roots), HOME=str(workdir), TMPDIR=str(workdir))
    for name in inherit:
        if name in os.environ:
            env[name] = os.environ[name]
    env.update(extra or {})
    for name, value in env.items():
        if name != "PATH" and names_protected_path(value, roots):
            raise UserInputError(
                f"{where}: environment variable {name} names a dabench path ({value}); an "
                "agent process must not be pointed at the suites, the world or the run"
            )
    return env


@contextlib.contextmanager
def agent_workdir() -> Iterator[Path]:
    """A fresh, empty temporary directory (the agent's cwd and home), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="agent-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class SealedResult:
    """What an agent process did."""

    returncode: int
    stdout: str
    stderr: str
    wall_ms: float
    timed_out: bool = False


async def run_sealed(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: str | None = None,
    timeout_s: float,
) -> SealedResult:
    """Run ``argv`` in ``cwd`` with exactly ``env``; on timeout its process group is killed
    (``timed_out`` set). A program that cannot be started raises :class:`UserInputError`."""
    t0 = time.perf_counter()
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise UserInputError(f"cannot start agent program {argv[0]!r}: {exc}") from exc
    data = stdin.encode("utf-8") if stdin is not None else None
    timed_out = False
    try:
        out, err = await asyncio.wait_for(process.communicate(data), timeout_s)
    except (TimeoutError, asyncio.CancelledError) as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        out, err = await process.communicate()
        if isinstance(exc, asyncio.CancelledError):
            raise
        timed_out = True
    return SealedResult(
        returncode=process.returncode if process.returncode is not None else -1,
        stdout=out.decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
        wall_ms=(time.perf_counter() - t0) * 1000,
        timed_out=timed_out,
    )


def tail(text: str, chars: int = 1500) -> str:
    """The end of a process's output, for error messages."""
    text = text.strip()
    return text if len(text) <= chars else "..." + text[-chars:]


@dataclass
class SealedRun:
    """One program run's working directory, as the harness and as the program see it."""

    workdir: Path
    """On the host (the harness reads and removes it)."""
    inside: Path
    """As the program sees it (``/agent`` in the sandbox)."""
    box: Sandbox | None

    def argv(self, program: Sequence[str]) -> list[str]:
        """``program`` wrapped in the sandbox (unchanged when unsealed)."""
        return self.box.wrap(program, self.workdir) if self.box else list(program)

    def env(self) -> dict[str, str]:
        """Variables the sandbox adds (its proxies)."""
        return self.box.proxy_env() if self.box else {}

    def metered(self) -> tuple[TokenUsage, float | None, str] | None:
        """Tokens, cost and cost source the model proxy metered (``None`` without one)."""
        meter = self.box.meter if self.box else None
        if meter is None or meter.requests == 0:
            return None
        cost, source = meter.cost()
        return meter.usage, cost, source


@dataclass
class Seal:
    """How an agent's programs run: in the sandbox (default) or, explicitly, unsealed."""

    settings: SandboxSettings
    protected: list[Path]
    where: str
    unsealed: bool = False

    def check(self) -> None:
        """Refuse now (when the arm is built) what would fail at the first episode: no
        ``bwrap`` without ``--unsealed``, a ``ro_binds`` path that shows dabench."""
        if not self.unsealed:
            require_bwrap(self.where)
            check_ro_binds(self.settings.ro_binds, self.protected, self.where)

    def describe(self) -> dict[str, Any]:
        """``isolation`` (``bwrap`` or ``unsealed``) and the sandbox settings."""
        return {
            "isolation": "unsealed" if self.unsealed else "bwrap",
            "sandbox": self.settings.model_dump(),
        }

    @contextlib.asynccontextmanager
    async def open(self, urls: Sequence[str]) -> AsyncIterator[SealedRun]:
        """A fresh working directory and, sealed, a sandbox that reaches ``urls``."""
        with agent_workdir() as workdir:
            if self.unsealed:
                yield SealedRun(workdir, workdir, None)
                return
            async with sandbox(urls, self.settings, self.protected, self.where) as box:
                yield SealedRun(workdir, INSIDE_WORKDIR, box)
