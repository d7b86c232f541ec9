"""Shared mapping from HTTP failures of an LLM API to :class:`ProviderError`.

Both SDK adapters (Anthropic, OpenAI-compatible) make their requests through
:func:`sdk_call`, so that a 429 from either API is classified the same way and its
``retry-after`` is honoured the same way.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import httpx2

from dabench.keepalive import DEFAULT_CLIENT_IDLE_S
from dabench.providers.base import ProviderError
from dabench.retry import parse_retry_after as parse_retry_after  # re-exported

E = TypeVar("E", bound=Exception)
T = TypeVar("T")

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""Statuses worth retrying: timeouts, conflicts, rate limits, server errors, overload (529)."""


def idle_limits() -> httpx2.Limits:
    """The SDKs' connection limits with an idle limit below the common 5 s server keep-alive
    (vLLM, llama.cpp server): an idle connection is closed, never reused after the server
    closed it. A connection failure is still a retryable :class:`ProviderError`."""
    return httpx2.Limits(
        max_connections=1000, max_keepalive_connections=100, keepalive_expiry=DEFAULT_CLIENT_IDLE_S
    )


def is_retryable_status(status: int) -> bool:
    """True for 408/409/429, every 5xx and Anthropic's 529 ``overloaded_error``."""
    return status in RETRYABLE_STATUSES or status >= 500


def status_error(
    provider: str, status: int, message: str, headers: Mapping[str, str]
) -> ProviderError:
    """A :class:`ProviderError` for an HTTP error ``status`` returned by ``provider``."""
    retryable = is_retryable_status(status)
    retry_after = parse_retry_after(headers) if retryable else None
    return ProviderError(
        f"{provider}: HTTP {status}: {message}", retryable=retryable, retry_after=retry_after
    )


def transport_error(provider: str, kind: str, detail: str) -> ProviderError:
    """A retryable :class:`ProviderError` for a timeout or a failed connection."""
    return ProviderError(f"{provider}: {kind}: {detail}", retryable=True)


def malformed_response(provider: str, detail: object) -> ProviderError:
    """A retryable :class:`ProviderError` for a 2xx body that is not the API's reply shape
    (not JSON, or JSON of another shape): usually a proxy or gateway glitch."""
    return ProviderError(f"{provider}: malformed response: {str(detail)[:300]}", retryable=True)


@dataclass(frozen=True)
class SdkErrors(Generic[E]):
    """The exception classes of one vendor SDK (the official ``anthropic`` and ``openai``
    SDKs share this hierarchy) and how to read an HTTP status error of that SDK."""

    status: type[E]
    """Raised for a non-2xx HTTP status."""
    timeout: type[Exception]
    connection: type[Exception]
    api: type[Exception]
    """The SDK's base error: anything else it raises means a malformed reply."""
    details: Callable[[E], tuple[int, str, Mapping[str, str]]]
    """A status error's HTTP status, readable message and response headers."""


async def sdk_call(provider: str, errors: SdkErrors[E], request: Awaitable[T]) -> tuple[T, float]:
    """Await one SDK ``request`` and return its result and latency in milliseconds; every SDK
    failure becomes a :class:`ProviderError` (status, timeout, connection, malformed reply)."""
    started = time.perf_counter()
    try:
        result = await request
    except errors.status as exc:
        status, message, headers = errors.details(exc)
        raise status_error(provider, status, message, headers) from exc
    except errors.timeout as exc:
        raise transport_error(provider, "timeout", str(exc)) from exc
    except errors.connection as exc:
        raise transport_error(provider, "connection error", str(exc)) from exc
    except (errors.api, ValueError) as exc:  # a body that is not the API's reply shape
        raise malformed_response(provider, exc) from exc
    return result, (time.perf_counter() - started) * 1000.0
