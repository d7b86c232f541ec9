"""Identities from API keys: who is calling, as which persona, and who is an admin.

``--auth FILE`` is YAML::

    identities:
      - {key: "k-teacher", user: teacher, persona: analyst}
      - {key: "k-learner", user: learner, persona: analyst}
    admin_keys: ["k-admin"]

The file (or ``--auth-fd N``, an inherited descriptor the harness writes it into, so no path
to a key file appears in the platform's argv) goes through the hardened YAML reader
(:mod:`dabench.safe_yaml`: size, UTF-8, nesting, node count, duplicate keys). Without
``--auth`` the platform uses :data:`DEV_AUTH` (fixed, documented dev keys; never for anything
but a laptop). Keys are compared in constant time.
"""

from __future__ import annotations

import hmac
import os
from pathlib import Path
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from dabench.errors import UserInputError
from dabench.fields import Name
from dabench.safe_yaml import MAX_FILE_BYTES, decode_bytes, load_text, read_text

Key = Annotated[str, StringConstraints(min_length=8, max_length=512, pattern=r"^[!-~]+$")]
"""An API key: 8 to 512 visible ASCII characters (it travels in a header)."""
MAX_IDENTITIES = 1000
EPISODE_KEY_PREFIX = "epk_"
"""Keys the platform mints for episodes start with this; a configured key may not."""


class Identity(BaseModel):
    """One API key and the user and persona it stands for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: Key
    user: Name
    persona: Name = "analyst"


class AuthConfig(BaseModel):
    """Every identity the platform accepts, plus the admin keys of the admin API."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    identities: list[Identity] = Field(max_length=MAX_IDENTITIES)
    admin_keys: list[Key] = Field(default_factory=list, max_length=MAX_IDENTITIES)

    @model_validator(mode="after")
    def _unique_keys(self) -> AuthConfig:
        keys = [i.key for i in self.identities] + list(self.admin_keys)
        if len(set(keys)) != len(keys):
            raise ValueError("every key (identity and admin) must be distinct")
        if any(k.startswith(EPISODE_KEY_PREFIX) for k in keys):
            raise ValueError(f"keys starting {EPISODE_KEY_PREFIX!r} are minted for episodes")
        users = [i.user for i in self.identities]
        if len(set(users)) != len(users):
            raise ValueError("each user may have one identity (one key) only")
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


def parse_auth(text: str, source: str) -> AuthConfig:
    """Validate ``--auth`` YAML ``text`` (hardened reader); ``source`` names it in errors."""
    data = load_text(text, source)
    try:
        return AuthConfig.model_validate(data)
    except ValidationError as exc:
        msgs = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or '<root>'}: {e['msg']}"
            for e in exc.errors()[:5]
        )
        raise UserInputError(f"{source}: invalid auth file: {msgs}") from exc


def load_auth(path: Path) -> AuthConfig:
    """Load and validate an ``--auth`` YAML file."""
    return parse_auth(read_text(path), str(path))


def read_auth_fd(fd: int) -> AuthConfig:
    """Read the auth YAML from inherited file descriptor ``fd`` (to its end) and close it."""
    source = f"--auth-fd {fd}"
    try:
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise UserInputError(f"{source}: cannot read: {exc.strerror or exc}") from exc
    return parse_auth(decode_bytes(data, source), source)


def bearer_key(authorization: str | None) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header value, else ``None``."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()
