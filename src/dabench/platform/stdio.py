"""Serving MCP on stdin/stdout: one session, one fixed identity, no HTTP stack imported.

The SDK's stdio reader drops a line it cannot read as a JSON-RPC message (unparseable, a
batch array, or one its strict JSON parser refuses, such as a lone surrogate escape
``"\\ud800"`` that Python's parser, and so the HTTP transport, accepts): the client would
wait forever and nothing would be audited. :class:`ScreenedLines` hands the SDK only the
lines it reads and answers the others itself: a JSON-RPC error with the request's id
(``-32602`` for a message refused only for its text, ``-32600`` for an invalid one) or id
null (``-32700`` for an unparseable line, ``-32600`` for a batch), one audit row each.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from io import TextIOWrapper
from typing import Any, cast

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from dabench.errors import UserInputError
from dabench.platform.admin.auth import AuthConfig, Identity
from dabench.platform.mcp_server import build_mcp_server
from dabench.platform.rpc_audit import AuditedRequest, describe_message
from dabench.platform.service import PlatformService

API_KEY_ENV = "DABENCH_API_KEY"
_SHOWN_CHARS = 4096
"""An unparseable line's audit row keeps its first characters."""


def stdio_identity(auth: AuthConfig, dev_default: bool) -> Identity:
    """The identity of a stdio server: ``DABENCH_API_KEY``, or the first dev identity."""
    key = os.environ.get(API_KEY_ENV)
    if key:
        identity = auth.identity_for(key)
        if identity is None:
            raise UserInputError(f"{API_KEY_ENV} is not a key of any identity in the auth config")
        return identity
    if dev_default:
        return auth.identities[0]
    raise UserInputError(f"stdio transport with --auth needs {API_KEY_ENV}=<identity key>")


@dataclass(frozen=True)
class Refusal:
    """How a line the SDK cannot read is answered and audited."""

    rpc_id: int | str | None
    answered: bool
    """``False`` for a notification (JSON-RPC answers none)."""
    rpc_code: int
    message: str
    error_code: str
    request: AuditedRequest


def refusal_for(line: str) -> Refusal | None:
    """``None`` when the SDK reads ``line`` (a JSON-RPC message), else its refusal."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValidationError:
        pass
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        shown = AuditedRequest("(unparseable)", parameters={"body": line[:_SHOWN_CHARS]})
        return Refusal(None, True, -32700, "Parse error", "PARSE_ERROR", shown)
    request = describe_message(message)
    if not isinstance(message, dict):
        return Refusal(None, True, -32600, "Invalid Request: one JSON-RPC object per line",
                       "INVALID_REQUEST", request)  # fmt: skip
    rpc_id = _rpc_id(message.get("id"))
    answered = "id" in message
    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError:
        return Refusal(rpc_id, answered, -32600, "Invalid Request", "INVALID_REQUEST", request)
    code = "INVALID_ARGUMENTS" if request.event_kind != "protocol" else "INVALID_PARAMS"
    text = "Invalid params: the message holds text that is not Unicode (a lone surrogate)"
    return Refusal(rpc_id, answered, -32602, text, code, request)


def _rpc_id(value: Any) -> int | str | None:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


class ScreenedLines:
    """stdin's lines for the SDK's stdio reader, minus the ones it cannot read: those are
    answered on the server's write stream (once :meth:`serve_refusals_on` gave it) and
    audited as ``identity``'s."""

    def __init__(
        self, lines: AsyncIterable[str], service: PlatformService, identity: Identity
    ) -> None:
        self._lines = lines
        self._service = service
        self._identity = identity
        self._out: anyio.abc.ObjectSendStream[SessionMessage] | None = None
        self._ready = anyio.Event()

    def serve_refusals_on(self, out: anyio.abc.ObjectSendStream[SessionMessage]) -> None:
        """Where refusals are written (the stream the server writes its answers to)."""
        self._out = out
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._screen()

    async def _screen(self) -> AsyncIterator[str]:
        async for line in self._lines:
            if not line.strip():
                continue
            started, timestamp = time.perf_counter(), datetime.now(UTC)
            refusal = refusal_for(line)
            if refusal is None:
                yield line
                continue
            sent = await self._answer(refusal)
            await anyio.to_thread.run_sync(self._audit, refusal, line, sent, started, timestamp)

    async def _answer(self, refusal: Refusal) -> int:
        """Write the refusal's JSON-RPC error (none for a notification); its length."""
        if not refusal.answered:
            return 0
        error = types.JSONRPCError(
            jsonrpc="2.0",
            id=refusal.rpc_id,
            error=types.ErrorData(code=refusal.rpc_code, message=refusal.message),
        )
        await self._ready.wait()
        assert self._out is not None
        try:
            await self._out.send(SessionMessage(error))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return 0
        return len(error.model_dump_json(by_alias=True, exclude_unset=True))

    def _audit(
        self, refusal: Refusal, line: str, sent: int, started: float, timestamp: datetime
    ) -> None:
        request = refusal.request
        self._service.record_request(
            self._identity,
            timestamp=timestamp,
            duration_ms=(time.perf_counter() - started) * 1000.0,
            tool_name=request.tool_name,
            event_kind=request.event_kind,
            parameters=request.parameters,
            presented_session=request.session,
            error_code=refusal.error_code,
            request_chars=len(line),
            response_chars=sent,
        )


def serve_stdio(service: PlatformService, identity: Identity) -> None:
    """Serve MCP over stdin/stdout until the client closes the pipe."""
    server = build_mcp_server(service, fixed_identity=identity)
    stdin = TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    lines = ScreenedLines(anyio.wrap_file(stdin), service, identity)

    async def main() -> None:
        screened = cast(anyio.AsyncFile[str], lines)  # the SDK only iterates over it
        async with stdio_server(stdin=screened) as (read_stream, write_stream):
            lines.serve_refusals_on(write_stream)
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        service.close()
