"""The sandbox an agent program runs in: bubblewrap (``bwrap``) with fresh user, PID, IPC, UTS,
mount and network namespaces (docs/harness.md, "Isolation").

Inside, the program sees read-only system directories (``/usr``, ``/bin``, ``/lib*``, a few
files of ``/etc``), its own ``/proc`` and a minimal ``/dev``, the paths its arm lists in
``agent.sandbox.ro_binds`` (its runtime), and one writable directory, ``/agent`` (its empty
working directory, also ``HOME`` and ``TMPDIR``). The dabench installation or source tree, the
harness's virtualenv, the world cache, the world, the experiment and the run directory are
never bound (and are hidden under an empty tmpfs where a bound directory holds them). Its
network namespace has only a loopback interface; the endpoints the harness hands in are
Unix sockets in ``/run/sandbox`` that the launcher (:mod:`dabench.isolation.launcher`) turns
into ``127.0.0.1`` ports.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from dabench.errors import UserInputError
from dabench.isolation.model_proxy import ModelProxySettings

INSIDE_WORKDIR = Path("/agent")
"""The agent's working directory (and home) inside the sandbox."""
INSIDE_RUN = Path("/run/sandbox")
"""Where the launcher and the endpoint sockets appear inside the sandbox (read-only)."""

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_PATHS = (
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
    "/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/localtime",
    "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts", "/etc/mime.types",
)  # fmt: skip
"""The few files of ``/etc`` that dynamic linking, TLS and name lookups need."""

SYSTEM_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")
"""Interpreters the launcher may run on (inside the bound system directories)."""


class SandboxSettings(BaseModel):
    """``agent: {sandbox: {ro_binds: [/opt/agent-venv], allow_hosts: [api.anthropic.com:443]}}``."""

    model_config = ConfigDict(extra="forbid")

    ro_binds: list[str] = Field(default_factory=list)
    """Absolute paths bound read-only at the same place: the agent's runtime (a virtualenv of
    its own, a Node installation, the program). Never the harness's virtualenv, the dabench
    installation or source tree, the world cache, the world, the experiment or the run."""
    allow_hosts: list[str] = Field(default_factory=list)
    """``host:port`` pairs the program may reach through the sandbox's HTTPS proxy
    (``HTTPS_PROXY=http://127.0.0.1:3128``): a model API. Empty: no proxy."""
    model_proxy: ModelProxySettings | None = None
    """A metered model endpoint: ``DABENCH_MODEL_URL=http://127.0.0.1:<port>`` forwards to
    ``upstream`` and the tokens of every response are added to the episode."""


def bwrap_path() -> str | None:
    """The ``bwrap`` executable, or ``None`` (then agents run only with ``--unsealed``)."""
    return shutil.which("bwrap") or shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")


def require_bwrap(where: str) -> str:
    """``bwrap``, or a clear error naming ``--unsealed``."""
    path = bwrap_path()
    if path is None:
        raise UserInputError(
            f"{where}: bubblewrap (bwrap) is not installed, so the agent program cannot be "
            "sealed from the answer key; install it (Debian/Ubuntu: apt-get install "
            "bubblewrap) or run with --unsealed (the manifest and every report then carry a "
            "caveat)"
        )
    return path


def launcher_python() -> str:
    """The system interpreter the launcher runs on (never the harness's virtualenv)."""
    for path in SYSTEM_PYTHONS:
        if os.access(path, os.X_OK):
            return path
    raise UserInputError(
        "the sandbox needs a system python3 (/usr/bin/python3; Debian package python3) to "
        "run its launcher"
    )


def harness_environments() -> list[Path]:
    """The harness's own virtualenv, where dabench is installed (none on a system Python:
    then the installed package itself is hidden, as a protected path)."""
    return [Path(sys.prefix).resolve()] if sys.prefix != sys.base_prefix else []


def _related(a: Path, b: Path) -> bool:
    return a == b or a in b.parents or b in a.parents


def _holds_dabench(path: Path) -> bool:
    if path.is_file():
        return path.name.startswith("dabench")
    candidates = [path, *path.glob("lib/python3*/site-packages"), *path.glob("site-packages")]
    for d in candidates:
        if (d / "dabench").exists() or any(d.glob("dabench-*.dist-info")):
            return True
        if any(d.glob("__editable__*dabench*")):
            return True
    return False


def check_ro_binds(binds: Sequence[str], protected: Sequence[Path], where: str) -> list[Path]:
    """The resolved ``ro_binds``; one that does not exist, is relative, or is, holds or lies
    inside a protected path or the harness's environment is refused."""
    out: list[Path] = []
    guarded = [*protected, *harness_environments()]
    for raw in binds:
        if not raw.startswith("/"):
            raise UserInputError(f"{where}: sandbox.ro_binds: {raw!r} is not an absolute path")
        path = Path(raw).resolve()
        if not path.exists():
            raise UserInputError(f"{where}: sandbox.ro_binds: {raw} does not exist")
        hit = next((p for p in guarded if _related(path, p)), None)
        if hit is not None or path == Path("/") or _holds_dabench(path):
            raise UserInputError(
                f"{where}: sandbox.ro_binds: {raw} would show the agent "
                f"{hit or 'a dabench installation'}: the harness's environment, dabench, the "
                "world, the experiment and the run are never bound (give the agent its own "
                "runtime, e.g. a virtualenv without dabench)"
            )
        out.append(path)
    return out


def _masks(bound: Sequence[Path], hidden: Sequence[Path]) -> list[str]:
    """Empty tmpfs (or ``/dev/null``) over every hidden path that lies inside a bound one."""
    args: list[str] = []
    for h in hidden:
        if any(b in h.parents for b in bound) and h.exists():
            args += ["--tmpfs", str(h)] if h.is_dir() else ["--ro-bind", "/dev/null", str(h)]
    return args


def bwrap_argv(
    program: Sequence[str],
    *,
    bwrap: str,
    workdir: Path,
    run_dir: Path,
    endpoints: Sequence[tuple[int, str]],
    ro_binds: Sequence[Path],
    hidden: Sequence[Path],
) -> list[str]:
    """The command that runs ``program`` sealed: ``workdir`` (host) becomes ``/agent``,
    ``run_dir`` (host: the launcher and the endpoint sockets) becomes ``/run/sandbox``, and
    each ``(port, socket name)`` of ``endpoints`` a local port."""
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session"]
    bound: list[Path] = []
    for d in SYSTEM_DIRS:
        p = Path(d)
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), d]
        elif p.is_dir():
            args += ["--ro-bind", d, d]
            bound.append(p.resolve())
    for e in ETC_PATHS:
        args += ["--ro-bind-try", e, e]
    for b in ro_binds:
        args += ["--ro-bind", str(b), str(b)]
        bound.append(b)
    args += _masks(bound, [*hidden, *harness_environments()])
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--ro-bind", str(run_dir), str(INSIDE_RUN)]
    args += ["--bind", str(workdir), str(INSIDE_WORKDIR), "--chdir", str(INSIDE_WORKDIR)]
    args += ["--remount-ro", "/", "--", launcher_python(), "-I", "-S"]
    args += [str(INSIDE_RUN / "launcher.py")]
    args += [f"{port}={INSIDE_RUN / name}" for port, name in endpoints]
    return [*args, "--", *program]
