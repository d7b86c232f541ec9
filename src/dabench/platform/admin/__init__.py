"""Administration of the platform: API-key auth, the audit log and the admin REST API.

- :mod:`.auth`: identities and admin keys from ``--auth FILE`` (or the dev keys).
- :mod:`.audit`: the audit log, one durable row per ``/mcp`` request.
- :mod:`.api`: the admin REST API (``/api/v1/admin/...``). It sits on top of
  :class:`~dabench.platform.service.PlatformService` (which itself writes the audit log), so it
  is not re-exported here: import it from :mod:`dabench.platform.admin.api`.
"""

from dabench.platform.admin.audit import AuditEvent, AuditPage, AuditQuery, AuditStore
from dabench.platform.admin.auth import DEV_AUTH, AuthConfig, Identity, load_auth

__all__ = [
    "DEV_AUTH",
    "AuditEvent",
    "AuditPage",
    "AuditQuery",
    "AuditStore",
    "AuthConfig",
    "Identity",
    "load_auth",
]
