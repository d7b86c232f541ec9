"""dabench.platform: the reference data platform, an MCP server over a world.

Light public API (no server imports)::

    AuditEvent, AuditPage, AuditQuery     audit rows as the admin API returns them
    Profile, load_profile, SHIPPED_PROFILES
    AuthConfig, Identity, DEV_AUTH, load_auth

The server itself: :class:`dabench.platform.service.PlatformService` (transport-free),
:func:`dabench.platform.app.build_http_app` (ASGI), ``dabench platform serve`` (CLI).
"""

from dabench.platform.admin.audit import AuditEvent, AuditPage, AuditQuery
from dabench.platform.admin.auth import DEV_AUTH, AuthConfig, Identity, load_auth
from dabench.platform.profile import SHIPPED_PROFILES, Profile, load_profile

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
