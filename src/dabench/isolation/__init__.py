"""Sealing agent programs in a bubblewrap sandbox (docs/harness.md, "Isolation")."""

from dabench.isolation.bridge import PROXY_PORT, Handler, Sandbox, sandbox
from dabench.isolation.bwrap import (
    INSIDE_RUN,
    INSIDE_WORKDIR,
    SandboxSettings,
    bwrap_path,
    check_ro_binds,
    launcher_python,
    require_bwrap,
)

__all__ = [
    "INSIDE_RUN",
    "INSIDE_WORKDIR",
    "PROXY_PORT",
    "Handler",
    "Sandbox",
    "SandboxSettings",
    "bwrap_path",
    "check_ro_binds",
    "launcher_python",
    "require_bwrap",
    "sandbox",
]
