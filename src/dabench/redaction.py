"""Masking the passwords of ``scheme://user:password@host`` URLs in what dabench writes or
prints (``target inspect``'s output, a run's manifest, a world's source)."""

from __future__ import annotations

import re
from typing import Any

_URL_SECRET = re.compile(r"(?P<head>[a-z][a-z0-9+.\-]*://[^/\s:@]*:)(?P<secret>[^@\s/]+)@", re.I)


def redact(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@`` URL replaced by
    ``***`` (a ``${VAR}`` reference is not a password and stays)."""

    def mask(m: re.Match[str]) -> str:
        secret = m.group("secret")
        if secret.startswith("${") and secret.endswith("}"):
            return m.group(0)
        return m.group("head") + "***@"

    return _URL_SECRET.sub(mask, text)


def redact_data(value: Any) -> Any:
    """JSON-like ``value`` with :func:`redact` applied to every string in it."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_data(v) for v in value]
    return value


def without_password(url: str) -> str:
    """``url`` with the ``:password`` of its ``user:password@`` part removed (supply it another
    way, e.g. ``PGPASSWORD``)."""
    return _URL_SECRET.sub(lambda m: m.group("head")[:-1] + "@", url)
