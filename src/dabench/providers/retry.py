"""The providers' names for the shared retry machinery in :mod:`dabench.retry`.

``with_retries`` retries a :class:`~dabench.providers.ProviderError` with ``retryable=True``
(a :class:`~dabench.retry.RetryableError`) with backoff and full jitter, never sooner than
its ``retry_after``; anything else propagates at once.
"""

from __future__ import annotations

from dabench.retry import RetryHook, RetryPolicy, SleepFn, with_retries

__all__ = ["RetryHook", "RetryPolicy", "SleepFn", "with_retries"]
