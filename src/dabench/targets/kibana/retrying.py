"""Which failed Kibana requests are repeated, and the default retry policy.

A request is repeated only when repeating it cannot apply it twice:

* any request: HTTP 429 and 503 (the server says it did not do the work, ``Retry-After``
  is the minimum wait) and connection failures before the request was sent
  (``httpx.ConnectError``, ``ConnectTimeout``, ``PoolTimeout``);
* idempotent requests (``GET``, ``PUT``, ``HEAD``, ``DELETE``: status, tool and agent
  look-ups, tool and agent updates) also HTTP 502 and 504, timeouts and dropped connections.

``POST`` (a ``converse`` round, a tool or agent creation) is never repeated after a 500, 502,
504 or a read timeout: the round may already be part of the conversation, and a retry would
add it twice. A stream is repeated only on an error status, which arrives before any event.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from pydantic import Field

from dabench.fields import FiniteNonNegative
from dabench.retry import RetryPolicy

SAFE_STATUSES = frozenset({429, 503})
"""Statuses that say the work was not done: any request may be repeated."""
IDEMPOTENT_STATUSES = SAFE_STATUSES | {502, 504}
"""Statuses after which an idempotent request may be repeated."""
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})

NOT_SENT: tuple[type[httpx.HTTPError], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
)
"""Transport failures that happen before the request leaves the client."""
IDEMPOTENT_TRANSPORT: tuple[type[httpx.HTTPError], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)
"""Transport failures after which an idempotent request may be repeated."""


class KibanaRetryPolicy(RetryPolicy):
    """The retry policy of the ``kibana`` target: 4 attempts, backoff from 1 s up to 30 s."""

    max_attempts: int = Field(default=4, ge=1)
    max_delay: FiniteNonNegative = 30.0


@dataclass(frozen=True)
class RetryRule:
    """The failures one request may be repeated after."""

    statuses: frozenset[int]
    transport: tuple[type[httpx.HTTPError], ...]

    def retries_status(self, status: int) -> bool:
        """True when a response with ``status`` may be answered by repeating the request."""
        return status in self.statuses

    def retries_transport(self, error: httpx.HTTPError) -> bool:
        """True when the transport failure ``error`` may be answered by repeating it."""
        return isinstance(error, self.transport)


SAFE = RetryRule(SAFE_STATUSES, NOT_SENT)
IDEMPOTENT = RetryRule(IDEMPOTENT_STATUSES, NOT_SENT + IDEMPOTENT_TRANSPORT)


def retry_rule(method: str) -> RetryRule:
    """The rule for a request with HTTP ``method``."""
    return IDEMPOTENT if method.upper() in IDEMPOTENT_METHODS else SAFE
