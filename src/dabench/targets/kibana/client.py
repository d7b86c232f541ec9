"""An async HTTP client for the Kibana Agent Builder API (converse, tools, agents, status).

Every request carries ``kbn-xsrf``, ``Authorization: ApiKey <key>`` and
``elastic-api-version: 2023-10-31``; a space prefixes the path with ``/s/<space>``.

Failures that are safe to repeat (:mod:`dabench.targets.kibana.retrying`: 429/503, connection
failures before sending, and for idempotent requests also 502/504 and timeouts) are retried
with :func:`dabench.retry.with_retries` under the client's :class:`~dabench.retry.RetryPolicy`;
each retry is logged and counted. Every other transport failure, timeout, HTTP 4xx/5xx and
``error`` event in a stream, and a retryable failure once the attempts are used up, raises
:class:`~dabench.errors.HarnessError` with the cause: never graded as a model failure.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from dabench.errors import HarnessError
from dabench.keepalive import DEFAULT_CLIENT_IDLE_S
from dabench.retry import RetryableError, RetryPolicy, SleepFn, parse_retry_after, with_retries
from dabench.targets.kibana.retrying import KibanaRetryPolicy, RetryRule, retry_rule
from dabench.targets.kibana.wire import ConverseRound, StreamAccumulator, parse_sync_response

API = "/api/agent_builder"
API_VERSION = "2023-10-31"

T = TypeVar("T")
log = logging.getLogger(__name__)


def _error_text(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return resp.text[:300]
    if isinstance(body, dict):
        message = body.get("message") or body.get("error")
        if message:
            return str(message)[:300]
    return json.dumps(body)[:300]


async def iter_sse(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    """``(event, data)`` frames of a server-sent event stream (comments ignored; the event
    defaults to ``message``; multiple ``data`` lines are joined with newlines)."""
    event = "message"
    data: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r")
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:
        yield event, "\n".join(data)


@dataclass(frozen=True)
class Refused:
    """An error status a caller asked to handle itself (see :meth:`KibanaClient.request`)."""

    status: int
    message: str

    @property
    def already_exists(self) -> bool:
        """Kibana's answer to creating an id that exists (``Tool with id X already exists``)."""
        return self.status == 409 or "already exists" in self.message.lower()


class KibanaClient:
    """One Kibana (one space) reached with an API key."""

    def __init__(
        self,
        url: str,
        api_key: str,
        *,
        space: str | None = None,
        timeout_s: float = 600.0,
        connect_timeout_s: float = 10.0,
        verify_tls: bool = True,
        retry: RetryPolicy | None = None,
        sleep: SleepFn = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        """``retry`` defaults to :class:`KibanaRetryPolicy`; ``sleep`` and ``rng`` are the
        backoff's clock and jitter source (tests pass their own to see the delays)."""
        self.base_url = url.rstrip("/") + (f"/s/{space}" if space else "")
        self.label = url.rstrip("/") + (f" (space {space})" if space else "")
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers={
                "kbn-xsrf": "dabench",
                "Authorization": f"ApiKey {api_key}",
                "elastic-api-version": API_VERSION,
                "Content-Type": "application/json",
            },
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            limits=httpx.Limits(keepalive_expiry=DEFAULT_CLIENT_IDLE_S),
            verify=verify_tls,
        )
        self.timeout_s = timeout_s
        self.retry = retry if retry is not None else KibanaRetryPolicy()
        self._sleep = sleep
        self._rng = rng
        self.retries = 0
        """Retries made by this client so far (every request)."""

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    @contextmanager
    def _transport_errors(
        self, method: str, path: str, failed: str, rule: RetryRule
    ) -> Iterator[None]:
        """Transport failures of one attempt: :class:`RetryableError` when ``rule`` allows a
        retry, else :class:`HarnessError` (a timeout says how long it waited)."""
        try:
            yield
        except httpx.HTTPError as exc:
            if rule.retries_transport(exc):
                raise RetryableError(repr(exc), retryable=True) from exc
            if isinstance(exc, httpx.TimeoutException):
                raise HarnessError(
                    f"kibana: {method} {path} timed out after {self.timeout_s:.0f}s ({exc!r})"
                ) from exc
            raise HarnessError(f"kibana: {method} {path} {failed}: {exc!r}") from exc

    @staticmethod
    def _check_status(method: str, path: str, resp: httpx.Response, rule: RetryRule) -> None:
        """An HTTP error status of one attempt as :class:`RetryableError` (honouring
        ``Retry-After``) when ``rule`` allows a retry, else as :class:`HarnessError`."""
        if resp.status_code < 400:
            return
        cause = f"HTTP {resp.status_code}: {_error_text(resp)}"
        if rule.retries_status(resp.status_code):
            wait = parse_retry_after(resp.headers)
            raise RetryableError(cause, retryable=True, retry_after=wait)
        raise HarnessError(f"kibana: {method} {path} -> {cause}")

    async def _retrying(
        self, method: str, path: str, attempt: Callable[[], Awaitable[T]]
    ) -> tuple[T, int]:
        """Run ``attempt`` under the retry policy; the result and the retries it needed.
        Attempts used up raise :class:`HarnessError` with their count and the last cause."""
        attempts = 0

        async def counted() -> T:
            nonlocal attempts
            attempts += 1
            return await attempt()

        def on_retry(number: int, error: RetryableError, delay: float) -> None:
            self.retries += 1
            log.warning(
                "kibana: %s %s: %s (attempt %d of %d); retrying in %.2f s",
                method,
                path,
                error,
                number,
                self.retry.max_attempts,
                delay,
            )

        try:
            result = await with_retries(
                counted, self.retry, sleep=self._sleep, rng=self._rng, on_retry=on_retry
            )
        except RetryableError as exc:
            plural = "" if attempts == 1 else "s"
            error = HarnessError(
                f"kibana: {method} {path} failed after {attempts} attempt{plural}; last: {exc}"
            )
            error.retries = attempts - 1
            raise error from exc
        except HarnessError as exc:  # a non-retryable failure after retried ones: keep the count
            exc.retries = attempts - 1
            raise
        return result, attempts - 1

    async def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        ok404: bool = False,
        refused: tuple[int, ...] = (),
    ) -> Any:
        """A JSON request, retried per :func:`retry_rule`; ``None`` for a 404 when ``ok404``;
        a status in ``refused`` comes back as :class:`Refused` (not retried); other errors as
        :class:`HarnessError`."""
        result, _retries = await self._request(method, path, body, ok404=ok404, refused=refused)
        return result

    async def _request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        *,
        ok404: bool,
        refused: tuple[int, ...] = (),
    ) -> tuple[Any, int]:
        rule = retry_rule(method)

        async def once() -> Any:
            with self._transport_errors(method, path, "failed", rule):
                resp = await self._http.request(method, path, json=body)
            if resp.status_code == 404 and ok404:
                return None
            if resp.status_code in refused:
                return Refused(resp.status_code, _error_text(resp))
            self._check_status(method, path, resp, rule)
            try:
                return resp.json() if resp.content else None
            except json.JSONDecodeError as exc:
                raise HarnessError(
                    f"kibana: {method} {path} returned invalid JSON: {resp.text[:200]}"
                ) from exc

        return await self._retrying(method, path, once)

    async def status(self) -> dict[str, Any]:
        """``GET /api/status`` (Kibana version and overall status)."""
        body = await self.request("GET", "/api/status")
        return body if isinstance(body, dict) else {}

    async def converse(self, payload: dict[str, Any]) -> ConverseRound:
        """``POST /api/agent_builder/converse``: one round, waiting for the whole response.
        Retried only on 429/503 and connection failures (the round was not applied)."""
        t0 = time.perf_counter()
        body, retries = await self._request("POST", f"{API}/converse", payload, ok404=False)
        rnd = parse_sync_response(body)
        rnd.wall_ms = (time.perf_counter() - t0) * 1000
        rnd.retries = retries
        return rnd

    async def converse_stream(self, payload: dict[str, Any]) -> ConverseRound:
        """``POST /api/agent_builder/converse/async``: one round over server-sent events, with
        the time to the first ``message_chunk`` measured here. Retried only on an error status
        (429/503, before any event) and connection failures; never once events were read."""
        path = f"{API}/converse/async"
        rule = retry_rule("POST")
        started = time.perf_counter()

        async def once() -> StreamAccumulator:
            acc = StreamAccumulator()
            t0 = time.perf_counter()
            with self._transport_errors("POST", path, "failed mid-stream", rule):
                async with self._http.stream("POST", path, json=payload) as resp:
                    if resp.status_code >= 400:
                        await resp.aread()
                        self._check_status("POST", path, resp, rule)
                    async for event, data in iter_sse(resp.aiter_lines()):
                        try:
                            parsed = json.loads(data)
                        except json.JSONDecodeError as exc:
                            raise HarnessError(
                                f"kibana: invalid JSON in a {event!r} event: {data[:200]}"
                            ) from exc
                        acc.feed(event, parsed, (time.perf_counter() - t0) * 1000)
            return acc

        acc, retries = await self._retrying("POST", path, once)
        rnd = acc.finish()
        rnd.wall_ms = (time.perf_counter() - started) * 1000
        rnd.retries = retries
        return rnd

    async def put_or_create(
        self, collection: str, item_id: str, create: dict[str, Any], update: dict[str, Any]
    ) -> str:
        """Create ``collection/item_id`` or update it when it exists; ``created``/``updated``.

        Another client may create the item between the ``GET`` (404) and the ``POST``; Kibana
        then refuses the ``POST`` ("... already exists", HTTP 400 or 409) and the item is
        updated with ``PUT`` instead. Any other refusal is a :class:`HarnessError`."""
        path = f"{API}/{collection}/{item_id}"
        existing = await self.request("GET", path, ok404=True)
        if existing is None:
            made = await self.request("POST", f"{API}/{collection}", create, refused=(400, 409))
            if not isinstance(made, Refused):
                return "created"
            if not made.already_exists:
                raise HarnessError(
                    f"kibana: POST {API}/{collection} -> HTTP {made.status}: {made.message}"
                )
        await self.request("PUT", path, update)
        return "updated"
