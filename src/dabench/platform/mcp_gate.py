"""The ``/mcp`` front door: authenticate, bound the body, and audit every request once.

:class:`McpAuditGate` wraps the SDK's streamable-HTTP app. Every HTTP request that reaches
``/mcp`` ends with exactly one audit row: a ``tools/call`` the SDK hands to the tool handler
is audited by :meth:`PlatformService.call` (which marks the request as audited); every other
request (refused by the gate, by the SDK, or not a tool call at all) is audited here when
it finishes, with the caller's identity (or ``(unauthenticated)``) and the outcome.
"""

from __future__ import annotations

import json
import re
import time
from collections import OrderedDict
from datetime import UTC, datetime

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dabench.platform.admin.audit import EventKind
from dabench.platform.admin.auth import Identity, bearer_key
from dabench.platform.admin.episodes import episode_of
from dabench.platform.admin.resource_metadata import HOW, challenge
from dabench.platform.rpc_audit import AuditedRequest, describe_message
from dabench.platform.service import PlatformService

IDENTITY_STATE_KEY = "dabench_identity"
AUDITED_STATE_KEY = "dabench_audited"
SESSION_HEADER = "x-dps-session"
TRANSPORT_SESSION_HEADER = b"mcp-session-id"
MAX_TRANSPORT_SESSIONS = 100_000
"""Transport sessions whose owner the gate remembers (:class:`TransportSessions`)."""
MAX_BODY_BYTES = 2 * 1024 * 1024
"""Request bodies above this are refused with HTTP 413 (``INPUT_TOO_LARGE``), unread."""

_CAPTURE = 4096
_RPC_ERROR = re.compile(rb'"error"\s*:\s*\{[^{}]*?"code"\s*:\s*(-?\d+)')
_RPC_CODES = {
    -32700: "PARSE_ERROR",
    -32600: "INVALID_REQUEST",
    -32601: "METHOD_NOT_FOUND",
    -32602: "INVALID_PARAMS",
    -32603: "INTERNAL_ERROR",
}


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def _describe(scope: Scope, body: bytes, complete: bool) -> AuditedRequest:
    """The audit view of a request: JSON-RPC method, tool and arguments when there are any.

    A body that cannot be read (unparseable, or cut off because it is too large) is named by
    the ``Mcp-Method`` / ``Mcp-Name`` headers when the client sent them (MCP 2026-07-28).
    """
    header_session = _header(scope, SESSION_HEADER.encode())
    if not body and complete:
        return AuditedRequest(f"({scope['method']})", session=header_session)
    try:
        message = json.loads(body) if complete else None
    except (ValueError, RecursionError):
        message = None
    if message is None:
        shown = {"body": body[:_CAPTURE].decode("utf-8", "surrogateescape")}
        named = _header(scope, b"mcp-name")
        if _header(scope, b"mcp-method") == "tools/call" and named:
            kind: EventKind = "session_start" if named == "platform_info" else "tool_call"
            return AuditedRequest(named, kind, shown, header_session)
        return AuditedRequest("(unparseable)", parameters=shown, session=header_session)
    return describe_message(message, header_session)


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The whole body, or ``(first chunks, True)`` once it grows past ``limit``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"".join(chunks), True
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), False


def _failure(status: int, response: bytes, request: AuditedRequest) -> str | None:
    """The error code of a request the gate audits from its response (``None``: success)."""
    rpc = _RPC_ERROR.search(response)
    if rpc is not None:
        number = int(rpc.group(1))
        return _RPC_CODES.get(number, f"JSONRPC_{number}")
    if status == 0 or status >= 400:
        return f"HTTP_{status}" if status else "NO_RESPONSE"
    if request.unanswerable:  # accepted (202), never run
        return "NOTIFICATION_IGNORED"
    return None


def _error_body(code: str, message: str, hint: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message, "hint": hint}}).encode()


class TransportSessions:
    """Who started each transport session (``Mcp-Session-Id``, the SDK's legacy stateful
    handshake): only that identity (the same user and episode) may use or delete it. A
    session is bound when the SDK's response names it, forgotten when it is deleted or the
    SDK no longer knows it (404); at most :data:`MAX_TRANSPORT_SESSIONS` are remembered
    (the oldest forgotten first)."""

    def __init__(self) -> None:
        self._owners: OrderedDict[str, tuple[str, str | None]] = OrderedDict()

    def may_use(self, session: str | None, identity: Identity) -> bool:
        """Whether ``identity`` may send a request naming ``session`` (an unknown one goes
        on to the SDK, which refuses it)."""
        owner = self._owners.get(session) if session else None
        return owner is None or owner == _owner(identity)

    def track(
        self, scope: Scope, start: Message, identity: Identity, presented: str | None
    ) -> None:
        """Bind the session a response names to the caller; forget a deleted or gone one."""
        status = int(start["status"])
        if presented and (status == 404 or (scope["method"] == "DELETE" and status < 300)):
            self._owners.pop(presented, None)
            return
        for key, value in start.get("headers", ()):
            if key.lower() == TRANSPORT_SESSION_HEADER and status < 300:
                session = value.decode("latin-1")
                if session not in self._owners:
                    self._owners[session] = _owner(identity)
                    if len(self._owners) > MAX_TRANSPORT_SESSIONS:
                        self._owners.popitem(last=False)


def _owner(identity: Identity) -> tuple[str, str | None]:
    return identity.user, episode_of(identity)


class McpAuditGate:
    """ASGI wrapper for ``/mcp``: one ``Authorization: Bearer <identity key>`` header (400
    when repeated, 401 when missing or unknown), bodies up to :data:`MAX_BODY_BYTES` (413),
    and one audit row per request."""

    def __init__(self, app: ASGIApp, service: PlatformService) -> None:
        self.app = app
        self.service = service
        self.transport_sessions = TransportSessions()

    def _refusal(
        self,
        authorizations: int,
        identity: Identity | None,
        too_large: bool,
        transport_session: str | None,
    ) -> tuple[int, str, str, str] | None:
        """``(status, code, message, hint)`` of a request the gate refuses, else ``None``."""
        if authorizations > 1:
            return (400, "DUPLICATE_AUTHORIZATION", "more than one Authorization header",
                    "send exactly one Authorization: Bearer <key>")  # fmt: skip
        if identity is None:
            return (401, "UNAUTHENTICATED", "a valid API key is required", HOW)
        if too_large:
            return (413, "INPUT_TOO_LARGE", f"the body exceeds {MAX_BODY_BYTES} bytes",
                    "send less")  # fmt: skip
        if not self.transport_sessions.may_use(transport_session, identity):
            return (403, "MCP_SESSION_NOT_YOURS",
                    "this Mcp-Session-Id was started by another identity",
                    "initialize a session of your own and send its Mcp-Session-Id")  # fmt: skip
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        timestamp = datetime.now(UTC)
        auth = [v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"authorization"]
        identity = None
        if len(auth) <= 1:
            identity = self.service.identify(bearer_key(auth[0] if auth else None))
        body, too_large = await _read_body(receive, MAX_BODY_BYTES)
        transport_session = _header(scope, TRANSPORT_SESSION_HEADER)
        refusal = self._refusal(len(auth), identity, too_large, transport_session)
        if refusal is not None:
            status, code, message, hint = refusal
            payload = _error_body(code, message, hint)
            headers = [(b"content-type", b"application/json")]
            if status == 401:
                headers.append((b"www-authenticate", challenge(scope, key_sent=bool(auth))))
            request = _describe(scope, body, not too_large)
            await self._audit(identity, request, started, timestamp, code, len(body), len(payload))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
            return
        state = scope.setdefault("state", {})
        state[IDENTITY_STATE_KEY] = identity
        state[AUDITED_STATE_KEY] = False
        replayed = False
        disconnected = anyio.Event()

        async def replay() -> Message:
            """The body read above, then (the gate reads the client's side itself) the
            disconnect once it comes."""
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def watch_disconnect(app_scope: anyio.CancelScope) -> None:
            """A client gone mid-request (it closed the connection: how an MCP 2026 client
            cancels a call) cancels the request's handling, so a running query is stopped
            (:meth:`PlatformService.acall`); the SDK does not watch for it in JSON mode."""
            while (await receive())["type"] != "http.disconnect":
                pass
            disconnected.set()
            app_scope.cancel()

        status = 0
        out = bytearray()
        sent_bytes = 0
        written = False

        async def write_row() -> None:
            """This request's row, unless the tool handler wrote it (at most once)."""
            nonlocal written
            if written or state.get(AUDITED_STATE_KEY):
                return
            written = True
            request = _describe(scope, body, True)  # only now: a tool call's is never needed
            failure = _failure(status, bytes(out), request)
            with anyio.CancelScope(shield=True):
                await self._audit(
                    identity, request, started, timestamp, failure, len(body), sent_bytes
                )

        async def capture(message: Message) -> None:
            nonlocal status, sent_bytes
            if message["type"] == "http.response.start":
                status = int(message["status"])
                assert identity is not None
                self.transport_sessions.track(scope, message, identity, transport_session)
            elif message["type"] == "http.response.body":
                chunk = message.get("body", b"")
                sent_bytes += len(chunk)
                if len(out) < _CAPTURE:
                    out.extend(chunk[: _CAPTURE - len(out)])
                if not message.get("more_body", False):
                    await write_row()  # committed before the response's last byte leaves
            await send(message)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch_disconnect, tg.cancel_scope)
                await self.app(scope, replay, capture)
                tg.cancel_scope.cancel()  # answered: stop watching
        finally:
            await write_row()  # no (complete) response was sent

    async def _audit(
        self,
        identity: Identity | None,
        request: AuditedRequest,
        started: float,
        timestamp: datetime,
        error_code: str | None,
        request_bytes: int,
        response_bytes: int,
    ) -> None:
        await anyio.to_thread.run_sync(
            lambda: self.service.record_request(
                identity,
                timestamp=timestamp,
                duration_ms=(time.perf_counter() - started) * 1000.0,
                tool_name=request.tool_name,
                event_kind=request.event_kind,
                parameters=request.parameters,
                presented_session=request.session,
                error_code=error_code,
                request_chars=request_bytes,
                response_chars=response_bytes,
            )
        )
