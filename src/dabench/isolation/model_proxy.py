"""The sandbox's model endpoint: a plain-HTTP reverse proxy, served to the agent program at
``http://127.0.0.1:<port>`` (``DABENCH_MODEL_URL``), that forwards every request to the arm's
configured provider (over HTTPS) and meters the tokens each response reports into the episode.

Requests are read whole (``Content-Length``; one request per connection, answered with
``Connection: close``); responses are streamed back as they arrive and their ``usage`` is read
from the JSON body or from the server-sent events (OpenAI's final ``usage`` chunk, Anthropic's
``message_start`` / ``message_delta``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from dabench.journal.records import TokenUsage

HOP_HEADERS = frozenset(
    {"host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
     "content-length", "content-encoding", "te", "trailer"}
)  # fmt: skip
"""Headers that describe one hop, never forwarded."""
MAX_METERED_BYTES = 16 * 1024 * 1024
"""Response bytes kept for reading the usage (the rest is forwarded unread)."""


class ModelProxySettings(BaseModel):
    """``sandbox: {model_proxy: {upstream: https://api.openai.com, wire: openai}}``."""

    model_config = ConfigDict(extra="forbid")

    upstream: str = Field(pattern=r"^https?://[^/]+")
    """The provider's base URL; a request for ``/v1/chat/completions`` goes to
    ``<upstream>/v1/chat/completions``."""
    wire: Literal["openai", "anthropic"] = "openai"
    """Where the usage is in a response, and the price table section used for the cost."""
    port: int = Field(default=8089, ge=1024, le=65535)
    """The local port inside the sandbox."""
    key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """A harness environment variable holding the provider key: the proxy sets it on every
    request (``Authorization: Bearer`` for ``openai``, ``x-api-key`` for ``anthropic``), so
    the program never holds the key. Unset: the program's own header is forwarded."""


def _usage(wire: str, raw: dict[str, Any]) -> TokenUsage:
    if wire == "anthropic":
        from dabench.providers.usage import anthropic_usage

        return anthropic_usage(raw)
    details = raw.get("prompt_tokens_details") or {}
    cache_read = int(details.get("cached_tokens") or 0)
    prompt = int(raw.get("prompt_tokens") or 0)
    return TokenUsage(
        input=max(0, prompt - cache_read),
        output=int(raw.get("completion_tokens") or 0),
        cache_read=cache_read,
    )


def _usage_dicts(body: bytes, content_type: str) -> tuple[list[dict[str, Any]], str | None]:
    """The ``usage`` objects of a response and the model it names."""
    events: list[Any] = []
    if "text/event-stream" in content_type:
        for line in body.decode("utf-8", "replace").splitlines():
            if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
                with contextlib.suppress(json.JSONDecodeError):
                    events.append(json.loads(line[5:]))
    else:
        with contextlib.suppress(json.JSONDecodeError, UnicodeDecodeError):
            events.append(json.loads(body))
    usages: list[dict[str, Any]] = []
    model = None
    for e in events:
        if not isinstance(e, dict):
            continue
        inner = e.get("message")
        message: dict[str, Any] = inner if isinstance(inner, dict) else {}
        for holder in (e, message):
            if isinstance(holder.get("usage"), dict):
                usages.append(holder["usage"])
            if isinstance(holder.get("model"), str):
                model = holder["model"]
    return usages, model


@dataclass
class Meter:
    """Tokens and model of every response that passed the proxy during one program run."""

    wire: str
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str | None = None
    requests: int = 0

    def record(self, body: bytes, content_type: str) -> None:
        """Add one response's usage (a stream's fields: the last value each event gave)."""
        usages, model = _usage_dicts(body, content_type)
        self.requests += 1
        self.model = model or self.model
        if not usages:
            return
        merged: dict[str, Any] = {}
        for u in usages:
            merged.update({k: v for k, v in u.items() if v is not None})
        one = _usage(self.wire, merged)
        self.usage = TokenUsage(
            input=self.usage.input + one.input,
            output=self.usage.output + one.output,
            cache_read=self.usage.cache_read + one.cache_read,
            cache_write=self.usage.cache_write + one.cache_write,
        )

    def cost(self) -> tuple[float | None, str]:
        """The metered tokens' cost from the price table (``None`` for an unpriced model)."""
        from dabench.providers.pricing import cost_for

        if self.model is None:
            return None, "none"
        return cost_for(self.wire, self.model, self.usage)


def _auth(settings: ModelProxySettings) -> dict[str, str]:
    if settings.key_env is None:
        return {}
    key = os.environ.get(settings.key_env, "")
    if settings.wire == "anthropic":
        return {"x-api-key": key}
    return {"Authorization": f"Bearer {key}"}


async def _reply_error(writer: asyncio.StreamWriter, status: str) -> None:
    writer.write(f"HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
    with contextlib.suppress(OSError):
        await writer.drain()


def model_proxy(
    settings: ModelProxySettings, meter: Meter, client: httpx.AsyncClient
) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    """The Unix-socket handler of the model endpoint."""
    base = settings.upstream.rstrip("/")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)
            lines = head.decode("latin-1").split("\r\n")
            method, target, _version = lines[0].split(" ", 2)
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip()] = value.strip()
            lowered = {k.lower(): v for k, v in headers.items()}
            if "chunked" in lowered.get("transfer-encoding", "") or not target.startswith("/"):
                await _reply_error(writer, "400 Bad Request")
                return
            body = await reader.readexactly(int(lowered.get("content-length") or 0))
            drop = HOP_HEADERS | ({"authorization", "x-api-key"} if settings.key_env else set())
            forward = {k: v for k, v in headers.items() if k.lower() not in drop}
            forward.update(_auth(settings))
            request = client.build_request(method, base + target, headers=forward, content=body)
            response = await client.send(request, stream=True)
            try:
                writer.write(
                    f"HTTP/1.1 {response.status_code} {response.reason_phrase}\r\n".encode()
                )
                for name, value in response.headers.items():
                    if name.lower() not in HOP_HEADERS:
                        writer.write(f"{name}: {value}\r\n".encode("latin-1", "replace"))
                writer.write(b"Connection: close\r\n\r\n")
                kept = bytearray()
                async for chunk in response.aiter_bytes():
                    writer.write(chunk)
                    await writer.drain()
                    if len(kept) < MAX_METERED_BYTES:
                        kept += chunk
            finally:
                await response.aclose()
            meter.record(bytes(kept), response.headers.get("content-type", ""))
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
            await _reply_error(writer, "400 Bad Request")
        except httpx.HTTPError:
            await _reply_error(writer, "502 Bad Gateway")
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    return handle
