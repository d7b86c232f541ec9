"""An async HTTP client for the Kibana Agent Builder API (converse, tools, agents, status).

Every request carries ``kbn-xsrf``, ``Authorization: ApiKey <key>`` and
``elastic-api-version: 2023-10-31``; a space prefixes the path with ``/s/<space>``. Transport
failures, timeouts, HTTP 4xx/5xx and ``error`` events in a stream raise
:class:`~dabench.errors.HarnessError` with the cause: they are never graded as model failures.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from dabench.errors import HarnessError
from dabench.targets.kibana.wire import ConverseRound, StreamAccumulator, parse_sync_response

API = "/api/agent_builder"
API_VERSION = "2023-10-31"


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
    ) -> None:
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
            verify=verify_tls,
        )
        self.timeout_s = timeout_s

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    @contextmanager
    def _transport_errors(self, method: str, path: str, failed: str) -> Iterator[None]:
        """Timeouts and other transport failures of a request as :class:`HarnessError`."""
        try:
            yield
        except httpx.TimeoutException as exc:
            raise HarnessError(
                f"kibana: {method} {path} timed out after {self.timeout_s:.0f}s ({exc!r})"
            ) from exc
        except httpx.HTTPError as exc:
            raise HarnessError(f"kibana: {method} {path} {failed}: {exc!r}") from exc

    async def request(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, ok404: bool = False
    ) -> Any:
        """A JSON request; ``None`` for a 404 when ``ok404``; errors as :class:`HarnessError`."""
        with self._transport_errors(method, path, "failed"):
            resp = await self._http.request(method, path, json=body)
        if resp.status_code == 404 and ok404:
            return None
        if resp.status_code >= 400:
            raise HarnessError(
                f"kibana: {method} {path} -> HTTP {resp.status_code}: {_error_text(resp)}"
            )
        try:
            return resp.json() if resp.content else None
        except json.JSONDecodeError as exc:
            raise HarnessError(
                f"kibana: {method} {path} returned invalid JSON: {resp.text[:200]}"
            ) from exc

    async def status(self) -> dict[str, Any]:
        """``GET /api/status`` (Kibana version and overall status)."""
        body = await self.request("GET", "/api/status")
        return body if isinstance(body, dict) else {}

    async def converse(self, payload: dict[str, Any]) -> ConverseRound:
        """``POST /api/agent_builder/converse``: one round, waiting for the whole response."""
        t0 = time.perf_counter()
        body = await self.request("POST", f"{API}/converse", payload)
        rnd = parse_sync_response(body)
        rnd.wall_ms = (time.perf_counter() - t0) * 1000
        return rnd

    async def converse_stream(self, payload: dict[str, Any]) -> ConverseRound:
        """``POST /api/agent_builder/converse/async``: one round over server-sent events, with
        the time to the first ``message_chunk`` measured here."""
        path = f"{API}/converse/async"
        acc = StreamAccumulator()
        t0 = time.perf_counter()
        with self._transport_errors("POST", path, "failed mid-stream"):
            async with self._http.stream("POST", path, json=payload) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    raise HarnessError(
                        f"kibana: POST {path} -> HTTP {resp.status_code}: {_error_text(resp)}"
                    )
                async for event, data in iter_sse(resp.aiter_lines()):
                    try:
                        parsed = json.loads(data)
                    except json.JSONDecodeError as exc:
                        raise HarnessError(
                            f"kibana: invalid JSON in a {event!r} event: {data[:200]}"
                        ) from exc
                    acc.feed(event, parsed, (time.perf_counter() - t0) * 1000)
        rnd = acc.finish()
        rnd.wall_ms = (time.perf_counter() - t0) * 1000
        return rnd

    async def put_or_create(
        self, collection: str, item_id: str, create: dict[str, Any], update: dict[str, Any]
    ) -> str:
        """Create ``collection/item_id`` or update it when it exists; ``created``/``updated``."""
        path = f"{API}/{collection}/{item_id}"
        existing = await self.request("GET", path, ok404=True)
        if existing is None:
            await self.request("POST", f"{API}/{collection}", create)
            return "created"
        await self.request("PUT", path, update)
        return "updated"
