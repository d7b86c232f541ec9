"""Serving over HTTP: one ASGI app (MCP at ``/mcp`` + admin API + health) under uvicorn.

MCP on stdio is :mod:`dabench.platform.stdio`, which imports none of the HTTP stack.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator
from types import FrameType
from typing import cast

import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from dabench.errors import UserInputError
from dabench.keepalive import SERVER_KEEP_ALIVE_S
from dabench.platform.admin.api import HTTP_ERROR_HANDLERS, SingleAuthorization, admin_routes
from dabench.platform.admin.resource_metadata import resource_metadata_routes
from dabench.platform.mcp_gate import McpAuditGate
from dabench.platform.mcp_server import build_mcp_server
from dabench.platform.service import PlatformService


def build_http_app(service: PlatformService, host: str = "127.0.0.1") -> Starlette:
    """The Starlette app: ``/mcp`` (streamable HTTP, bearer auth), its protected-resource
    metadata (RFC 9728), admin API, ``/healthz``."""
    server = build_mcp_server(service)
    security = None
    if host in ("127.0.0.1", "localhost", "::1"):
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = StreamableHTTPSessionManager(
        app=server, json_response=True, security_settings=security
    )
    mcp_endpoint = McpAuditGate(StreamableHTTPASGIApp(manager), service)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            try:
                yield
            finally:
                service.close()

    routes = [
        Route("/mcp", endpoint=mcp_endpoint),
        *resource_metadata_routes(),
        *admin_routes(service),
    ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers=HTTP_ERROR_HANDLERS,
        middleware=[Middleware(SingleAuthorization)],
    )


class _GracefulServer(uvicorn.Server):
    """A uvicorn server that exits with status 0 after a graceful SIGINT/SIGTERM shutdown."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._captured_signals.clear()  # do not re-raise the signal after shutting down


def bind_http_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0: a free one; ``getsockname()`` tells which),
    for :func:`serve_http` to listen on."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UserInputError(f"--host {host} --port {port}: cannot listen: {exc}") from exc
    return sock


def serve_http(
    service: PlatformService,
    host: str,
    port: int,
    keep_alive_s: float = SERVER_KEEP_ALIVE_S,
    sock: socket.socket | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM (uvicorn shuts down gracefully, then the stores close).
    ``keep_alive_s``: idle keep-alive connections are closed after this many seconds;
    ``sock``: listen on this bound socket (:func:`bind_http_socket`) instead of ``port``."""
    app = build_http_app(service, host)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
        lifespan="on",
        # typed int, but uvicorn only hands it to loop.call_later: fractions work
        timeout_keep_alive=cast(int, keep_alive_s),
    )
    _GracefulServer(config).run(sockets=[sock] if sock is not None else None)
