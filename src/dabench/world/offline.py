"""DuckDB's offline settings, in a module of their own: the SQL worker processes import them
without the world builder's dependencies (numpy)."""

from __future__ import annotations

OFFLINE_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}
"""DuckDB settings that keep every connection offline: no extension install or auto-load,
no access to files or URLs outside the database."""
