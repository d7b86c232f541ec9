"""Sealing agent programs in a bubblewrap sandbox (docs/harness.md, "Isolation")."""

from dabench.isolation.bridge import PROXY_PORT, Sandbox, sandbox
from dabench.isolation.bwrap import (
    INSIDE_WORKDIR,
    SandboxSettings,
    bwrap_path,
    check_ro_binds,
    require_bwrap,
)

__all__ = [
    "INSIDE_WORKDIR",
    "PROXY_PORT",
    "Sandbox",
    "SandboxSettings",
    "bwrap_path",
    "check_ro_binds",
    "require_bwrap",
    "sandbox",
]
