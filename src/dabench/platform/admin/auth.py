"""Identities from API keys: who is calling, as which persona, and who is an admin.

``--auth FILE`` is YAML::

    identities:
      - {key: "k-teacher", user: teacher, persona: analyst}
      - {key: "k-learner", user: learner, persona: analyst}
    admin_keys: ["k-admin"]

Without ``--auth`` the platform uses :data:`DEV_AUTH` (fixed, documented dev keys; never for
anything but a laptop). Keys are compared in constant time.
"""

from __future__ import annotations

import hmac
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dabench.errors import UserInputError


class Identity(BaseModel):
    """One API key and the user and persona it stands for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str = Field(min_length=8)
    user: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.@-]+$")
    persona: str = "analyst"


class AuthConfig(BaseModel):
    """Every identity the platform accepts, plus the admin keys of the admin API."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    identities: list[Identity]
    admin_keys: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_keys(self) -> AuthConfig:
        keys = [i.key for i in self.identities] + list(self.admin_keys)
        if len(set(keys)) != len(keys):
            raise ValueError("every key (identity and admin) must be distinct")
        if any(len(k) < 8 for k in self.admin_keys):
            raise ValueError("admin keys must be at least 8 characters")
        return self

    def identity_for(self, key: str | None) -> Identity | None:
        """The identity holding ``key`` (constant-time comparison), else ``None``."""
        if not key:
            return None
        found: Identity | None = None
        for ident in self.identities:
            if hmac.compare_digest(ident.key.encode(), key.encode()):
                found = ident
        return found

    def is_admin(self, key: str | None) -> bool:
        """Whether ``key`` is an admin key (constant-time comparison)."""
        if not key:
            return False
        hit = False
        for admin in self.admin_keys:
            hit |= hmac.compare_digest(admin.encode(), key.encode())
        return hit


DEV_AUTH = AuthConfig(
    identities=[
        Identity(key="dev-teacher-key", user="teacher", persona="analyst"),
        Identity(key="dev-learner-key", user="learner", persona="analyst"),
        Identity(key="dev-reviewer-key", user="reviewer", persona="reviewer"),
    ],
    admin_keys=["dev-admin-key"],
)
"""The default dev identities used when ``--auth`` is not given."""


def load_auth(path: Path) -> AuthConfig:
    """Load and validate an ``--auth`` YAML file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserInputError(f"{path}: cannot read auth file: {exc}") from exc
    except yaml.YAMLError as exc:
        raise UserInputError(f"{path}: not valid YAML: {exc}") from exc
    try:
        return AuthConfig.model_validate(data)
    except ValidationError as exc:
        msgs = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
        raise UserInputError(f"{path}: invalid auth file: {msgs}") from exc


def bearer_key(authorization: str | None) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header value, else ``None``."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()
