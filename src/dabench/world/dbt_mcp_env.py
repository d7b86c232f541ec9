"""dbt-mcp (local mode) in a Debian 13 root with Python 3.13, run through bubblewrap.

dbt-mcp needs Python >= 3.12; where the host has an older Python and only Debian's apt
repositories and PyPI are reachable, :func:`install_dbt_mcp` makes one with ``debootstrap``:

1. a minimal Debian ``trixie`` root (``--variant=minbase``, with ``python3``,
   ``python3-venv`` and ``ca-certificates``) under ``$DABENCH_CACHE/dbt-mcp/root``, from
   the Debian mirror the host's apt configuration names (read at run time);
2. a venv inside it, ``/opt/dbt-mcp``, with :data:`DBT_MCP_PACKAGES` from PyPI, made for the
   root's own Python in a bubblewrap sandbox that shares the host's network, DNS and CA
   bundle for the install only: by the host's uv mounted into the sandbox when there is one
   (:func:`dabench.venvs.find_uv`; uv must run the interpreter it installs for, which runs
   only inside the root), else by the root's ``python3 -m venv`` and pip.

Both steps run once (a lock serialises parallel installers; a ``.ok`` marker says done).
:func:`dbt_mcp_command` is the stdio server's command line: bubblewrap with the root's
``/usr``, ``/etc`` and ``/opt`` read-only, the exported dbt project and the warehouse files
its profile attaches read-only, a private ``/tmp`` (dbt's target and log paths), no network
(the host's for a PostgreSQL warehouse, reached as a SELECT-only role) and a clean
environment; dbt-mcp is configured for local mode with only its read tools
(``show``, ``compile``, ``list``, ``get_node_details_dev``, ``get_lineage_dev``): see
:data:`DBT_MCP_ENV`. ``dabench world dbt-mcp install`` / ``serve`` are the CLI.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from dabench.cachedir import cache_root
from dabench.venvs import Installer, InstallError, find_uv, run_step
from dabench.world.dbt_env import DbtToolError

SUITE = "trixie"
"""The Debian release debootstrap installs (its ``python3`` is 3.13)."""
ROOT_PACKAGES = ("python3", "python3-venv", "ca-certificates")
VENV = "/opt/dbt-mcp"
"""The venv's path inside the root."""
DBT_MCP_PACKAGES = ("dbt-mcp==2.8.0", "dbt-core<1.12", "dbt-duckdb", "dbt-postgres")
"""The venv's packages; DuckDB is pinned to the dbt venv's version at install time (it must
read the mart file that venv's dbt wrote)."""
READ_TOOLS_ONLY = "build,run,test,clone,docs,parse"
"""dbt-mcp tools disabled: every command that writes (or rewrites the project's state)."""
DBT_MCP_ENV = {
    "DBT_PATH": f"{VENV}/bin/dbt",
    "DBT_TARGET_PATH": "/tmp/target",
    "DBT_LOG_PATH": "/tmp/logs",
    "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    "DO_NOT_TRACK": "1",
    "DISABLE_SEMANTIC_LAYER": "true",
    "DISABLE_DISCOVERY": "true",
    "DISABLE_ADMIN_API": "true",
    "DISABLE_SQL": "true",
    "DISABLE_DBT_CODEGEN": "true",
    "DISABLE_LSP": "true",
    "DISABLE_PRODUCT_DOCS": "true",
    "DISABLE_MCP_SERVER_METADATA": "true",
    "DISABLE_TOOLS": READ_TOOLS_ONLY,
}
"""dbt-mcp's settings: local dbt CLI only (its cloud tools off), read tools only; dbt writes
its manifest and logs into the sandbox's private /tmp."""
APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))
STEP_TIMEOUT_S = 1200


def install_dir() -> Path:
    """Where the root and its venv live (``$DABENCH_CACHE/dbt-mcp``)."""
    return cache_root() / "dbt-mcp"


def apt_mirror(sources: tuple[Path, ...] = APT_SOURCES) -> str:
    """The first Debian archive URI of the host's apt configuration (one-line ``deb``
    entries and deb822 ``URIs:`` fields; security archives skipped)."""
    files: list[Path] = []
    for src in sources:
        files += sorted(src.glob("*.list")) + sorted(src.glob("*.sources")) if src.is_dir() else []
        files += [src] if src.is_file() else []
    for path in files:
        for line in path.read_text(errors="replace").splitlines():
            line = line.split("#", 1)[0].strip()
            m = re.match(r"^(?:deb\s+(?:\[[^]]*\]\s+)?|URIs:\s*)(\S+)", line)
            if m and not m.group(1).rstrip("/").endswith("-security"):
                return m.group(1)
    raise DbtToolError(
        f"no Debian archive URI in the apt configuration ({', '.join(map(str, sources))})"
    )


def _run(argv: list[str], what: str) -> None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise DbtToolError(f"{what}: over {STEP_TIMEOUT_S}s") from exc
    if proc.returncode != 0:
        raise DbtToolError(
            f"{what} failed ({' '.join(argv[:3])} ...):\n{(proc.stderr or proc.stdout)[-1500:]}"
        )


def _debootstrap() -> str:
    found = shutil.which("debootstrap")
    if found:
        return found
    if os.geteuid() != 0:
        raise DbtToolError("debootstrap is not installed (apt-get install debootstrap, as root)")
    _run(["apt-get", "install", "-y", "-q", "debootstrap"], "apt-get install debootstrap")
    return shutil.which("debootstrap") or "/usr/sbin/debootstrap"


SANDBOX_UV = "/tmp/uv"
"""Where the host's uv binary is mounted inside the install sandbox (its private /tmp)."""


def _root_python_argv(root: Path, *argv: str, uv: str | None = None) -> list[str]:
    """``argv`` run inside the root, writable, with the host's network, DNS and CA bundle
    (``SSL_CERT_FILE`` names it: uv reads no other) and the host's ``uv`` binary read-only at
    :data:`SANDBOX_UV` when given."""
    ca = Path("/etc/ssl/certs/ca-certificates.crt")
    return [
        "bwrap", "--bind", str(root), "/", "--dev", "/dev", "--proc", "/proc",
        "--tmpfs", "/tmp", "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf",
        *(["--ro-bind", str(ca), str(ca)] if ca.is_file() else []),
        *(["--ro-bind", uv, SANDBOX_UV] if uv is not None else []),
        "--clearenv", "--setenv", "HOME", "/tmp", "--setenv", "PATH", "/usr/bin:/bin",
        "--setenv", "PIP_DISABLE_PIP_VERSION_CHECK", "1",
        *(["--setenv", "SSL_CERT_FILE", str(ca)] if ca.is_file() else []), "--", *argv,
    ]  # fmt: skip


def _unmount_below(root: Path) -> None:
    """Unmount what an interrupted debootstrap left mounted under ``root`` (its ``/proc``,
    ``/sys``), deepest first, so removing the root never walks into the host's files."""
    mounts = Path("/proc/self/mounts")
    if not mounts.is_file():
        return
    prefix = str(root.resolve()) + "/"
    points = [line.split()[1] for line in mounts.read_text().splitlines() if len(line.split()) > 1]
    for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def _dbt_venv_duckdb(dbt_venv: Path) -> str | None:
    """The DuckDB version installed in the dbt venv (from its dist-info directory)."""
    for info in dbt_venv.glob("lib/python3*/site-packages/duckdb-*.dist-info"):
        return info.name[len("duckdb-") : -len(".dist-info")]
    return None


def install_root(base: Path | None = None) -> Path:
    """Step 1 alone: the Debian root under ``base`` (default :func:`install_dir`), built once
    (a ``.root-ok`` marker says done; the same lock as :func:`install_dbt_mcp`)."""
    base = base or install_dir()
    base.mkdir(parents=True, exist_ok=True)
    root = base / "root"
    with (base / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (base / ".root-ok").exists():
            (base / ".ok").unlink(missing_ok=True)  # the venv inside goes with the root
            _unmount_below(root)
            shutil.rmtree(root, ignore_errors=True)
            started = time.monotonic()
            _run(
                [_debootstrap(), "--variant=minbase", f"--include={','.join(ROOT_PACKAGES)}",
                 SUITE, str(root), apt_mirror()],
                f"debootstrap {SUITE}",
            )  # fmt: skip
            (base / ".root-ok").write_text(f"{time.monotonic() - started:.0f}s\n")
    return root


def install_dbt_mcp(dbt_venv: Path | None = None, target: Path | None = None) -> Path:
    """The Debian root holding dbt-mcp's venv (built once; see the module docstring).

    ``dbt_venv`` (default: none) pins the venv's DuckDB to that venv's version."""
    base = target or install_dir()
    root = install_root(base)
    duckdb = _dbt_venv_duckdb(dbt_venv) if dbt_venv is not None else None
    packages = (*DBT_MCP_PACKAGES, *([f"duckdb=={duckdb}"] if duckdb else []))
    with (base / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = base / ".ok"
        if marker.exists() and marker.read_text().split() == list(packages):
            return root
        marker.unlink(missing_ok=True)
        shutil.rmtree(root / VENV.lstrip("/"), ignore_errors=True)
        host_uv = find_uv()
        inside = Installer(uv=None if host_uv is None else SANDBOX_UV)
        for argv in (
            inside.create_argv(VENV, "/usr/bin/python3"),
            inside.install_argv(f"{VENV}/bin/python", packages),
        ):
            try:
                run_step(_root_python_argv(root, *argv, uv=host_uv), STEP_TIMEOUT_S)
            except InstallError as exc:
                raise DbtToolError(str(exc)) from exc
        marker.write_text(" ".join(packages) + "\n")
    return root


def _profile_output(project: Path) -> dict[str, Any]:
    """The project's default target (from its profiles.yml)."""
    import yaml  # here: the installers run on the system Python (standard library only)

    try:
        profiles = yaml.safe_load((project / "profiles.yml").read_text())
        (profile,) = profiles.values()
        output: dict[str, Any] = profile["outputs"][profile.get("target", "dev")]
    except (OSError, yaml.YAMLError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DbtToolError(f"{project}: cannot read profiles.yml: {exc}") from exc
    return output


def _attached(output: dict[str, Any]) -> list[Path]:
    """The files a DuckDB target opens: its path and attachments (none for PostgreSQL)."""
    if output.get("type") != "duckdb":
        return []
    return [Path(output["path"]), *(Path(a["path"]) for a in output.get("attach", []))]


def dbt_mcp_command(project: Path, root: Path | None = None) -> list[str]:
    """The bubblewrap command line that serves ``project`` with dbt-mcp over stdio."""
    root = root or install_dir() / "root"
    if not (root / VENV.lstrip("/") / "bin" / "dbt-mcp").is_file():
        raise DbtToolError(
            f"dbt-mcp is not installed under {root}: run `dabench world dbt-mcp install`"
        )
    project = project.resolve()
    output = _profile_output(project)
    binds = [
        project,
        *(p.resolve() for p in _attached(output) if not p.resolve().is_relative_to(project)),
    ]
    # A PostgreSQL warehouse is reached over the network: the sandbox keeps the host's (the
    # profile's reader role is SELECT-only, so the engine refuses writes); a DuckDB one has none.
    network = ["--share-net"] if output.get("type") == "postgres" else []
    for path in binds:
        if not path.exists():
            raise DbtToolError(f"{path} does not exist (the dbt project's profile names it)")
    env = {**DBT_MCP_ENV, "DBT_PROJECT_DIR": str(project), "DBT_PROFILES_DIR": str(project)}
    return [
        "bwrap",
        *(a for d in ("usr", "etc", "opt") for a in ("--ro-bind", str(root / d), f"/{d}")),
        *(a for d in ("bin", "lib", "lib64", "sbin") for a in ("--symlink", f"usr/{d}", f"/{d}")),
        "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
        *(a for p in binds for a in ("--ro-bind", str(p), str(p))),
        "--unshare-all", *network, "--die-with-parent", "--clearenv",
        "--setenv", "HOME", "/tmp", "--setenv", "PATH", f"{VENV}/bin:/usr/bin:/bin",
        *(a for k, v in env.items() for a in ("--setenv", k, v)),
        "--chdir", str(project), "--", f"{VENV}/bin/dbt-mcp",
    ]  # fmt: skip
