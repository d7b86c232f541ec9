"""Retries with exponential backoff and full jitter, shared by providers and targets.

An attempt that fails in a way worth repeating raises a :class:`RetryableError` (the
providers' :class:`~dabench.providers.ProviderError` is one); :func:`with_retries` retries
it when ``retryable`` is set and lets anything else propagate at once. The delay before
retry *n* (0-based) is drawn uniformly from ``[0, min(max_delay, base_delay * 2**n)]``
("full jitter"), or is exactly that cap when ``jitter`` is off, and is never shorter than
the error's ``retry_after``. Given the same ``rng`` the sequence of delays is identical.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from dabench.fields import FiniteNonNegative

T = TypeVar("T")

SleepFn = Callable[[float], Awaitable[None]]


class RetryableError(Exception):
    """One attempt failed; ``retryable`` says whether repeating it is safe and worthwhile,
    ``retry_after`` (seconds) is the server's minimum wait, when it named one."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


RetryHook = Callable[[int, RetryableError, float], None]
"""Called before each retry with (attempt number from 1, the error, the delay in seconds)."""


class RetryPolicy(BaseModel):
    """How often and how long to retry a retryable error."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=5, ge=1)
    """Total attempts including the first; 1 disables retries."""
    base_delay: FiniteNonNegative = 1.0
    """Backoff cap of the first retry, in seconds; doubles on each retry."""
    max_delay: FiniteNonNegative = 60.0
    """Upper bound of the backoff cap, in seconds (a ``retry_after`` may exceed it)."""
    jitter: bool = True
    """Full jitter: draw the delay uniformly between 0 and the cap."""

    def backoff(self, retry_index: int, rng: random.Random) -> float:
        """The backoff delay before retry ``retry_index`` (0-based), ignoring ``retry_after``."""
        cap = min(self.max_delay, self.base_delay * (2.0**retry_index))
        return rng.uniform(0.0, cap) if self.jitter else cap

    def delay_for(self, retry_index: int, error: RetryableError, rng: random.Random) -> float:
        """The delay before retry ``retry_index``: the backoff, at least ``error.retry_after``."""
        delay = self.backoff(retry_index, rng)
        if error.retry_after is not None:
            delay = max(delay, error.retry_after)
        return delay


async def with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    sleep: SleepFn = asyncio.sleep,
    rng: random.Random | None = None,
    on_retry: RetryHook | None = None,
) -> T:
    """Await ``call()`` and retry it on a retryable :class:`RetryableError` per ``policy``.

    ``rng`` defaults to a fresh generator seeded from the system, so that concurrent
    episodes do not retry in lock-step; pass ``random.Random(seed)`` for a reproducible
    sequence of delays. Re-raises the last error once ``max_attempts`` are used.
    """
    generator = rng if rng is not None else random.Random()
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except RetryableError as error:
            if not error.retryable or attempt >= policy.max_attempts:
                raise
            delay = policy.delay_for(attempt - 1, error, generator)
            if on_retry is not None:
                on_retry(attempt, error, delay)
            await sleep(delay)


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait according to ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date).

    Returns ``None`` when neither header is present or parseable; negative waits become 0.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, parsed.timestamp() - current)
