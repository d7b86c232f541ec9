"""dabench.platform: the reference data platform, an MCP server over a world.

Light public API (no server imports)::

    AuditEvent, AuditPage, AuditQuery     audit rows as the admin API returns them
    Profile, load_profile, SHIPPED_PROFILES
    AuthConfig, Identity, DEV_AUTH, load_auth

The server itself: :class:`dabench.platform.service.PlatformService` (transport-free),
:func:`dabench.platform.app.build_http_app` (ASGI), ``dabench platform serve`` (CLI).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dabench.lazy import lazy_exports

if TYPE_CHECKING:
    from dabench.platform.admin.audit import AuditEvent, AuditPage, AuditQuery
    from dabench.platform.admin.auth import DEV_AUTH, AuthConfig, Identity, load_auth
    from dabench.platform.profile import SHIPPED_PROFILES, Profile, load_profile

__getattr__ = lazy_exports(
    __name__,
    {
        "dabench.platform.admin.audit": [
            "AuditEvent",
            "AuditPage",
            "AuditQuery",
        ],
        "dabench.platform.admin.auth": [
            "DEV_AUTH",
            "AuthConfig",
            "Identity",
            "load_auth",
        ],
        "dabench.platform.profile": [
            "SHIPPED_PROFILES",
            "Profile",
            "load_profile",
        ],
    },
)

__all__ = [
    "DEV_AUTH",
    "SHIPPED_PROFILES",
    "AuditEvent",
    "AuditPage",
    "AuditQuery",
    "AuthConfig",
    "Identity",
    "Profile",
    "load_auth",
    "load_profile",
]
