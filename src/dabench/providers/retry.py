"""Retries with exponential backoff and full jitter for retryable provider errors.

``with_retries`` retries only :class:`ProviderError` with ``retryable=True``; anything else
propagates at once. The delay before retry *n* (0-based) is drawn uniformly from
``[0, min(max_delay, base_delay * 2**n)]`` ("full jitter"), or is exactly that cap when
``jitter`` is off, and is never shorter than the error's ``retry_after``. Given the same
``rng`` the sequence of delays is identical.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from dabench.providers.base import ProviderError

T = TypeVar("T")

SleepFn = Callable[[float], Awaitable[None]]
RetryHook = Callable[[int, ProviderError, float], None]
"""Called before each retry with (attempt number from 1, the error, the delay in seconds)."""


class RetryPolicy(BaseModel):
    """How often and how long to retry a retryable provider error."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=5, ge=1)
    """Total attempts including the first; 1 disables retries."""
    base_delay: float = Field(default=1.0, ge=0.0)
    """Backoff cap of the first retry, in seconds; doubles on each retry."""
    max_delay: float = Field(default=60.0, ge=0.0)
    """Upper bound of the backoff cap, in seconds (a ``retry_after`` may exceed it)."""
    jitter: bool = True
    """Full jitter: draw the delay uniformly between 0 and the cap."""

    def backoff(self, retry_index: int, rng: random.Random) -> float:
        """The backoff delay before retry ``retry_index`` (0-based), ignoring ``retry_after``."""
        cap = min(self.max_delay, self.base_delay * (2.0**retry_index))
        return rng.uniform(0.0, cap) if self.jitter else cap

    def delay_for(self, retry_index: int, error: ProviderError, rng: random.Random) -> float:
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
    """Await ``call()`` and retry it on retryable :class:`ProviderError` per ``policy``.

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
        except ProviderError as error:
            if not error.retryable or attempt >= policy.max_attempts:
                raise
            delay = policy.delay_for(attempt - 1, error, generator)
            if on_retry is not None:
                on_retry(attempt, error, delay)
            await sleep(delay)
