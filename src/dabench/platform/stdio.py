"""Serving MCP on stdin/stdout: one session, one fixed identity, no HTTP stack imported."""

from __future__ import annotations

import os

import anyio
from mcp.server.stdio import stdio_server

from dabench.errors import UserInputError
from dabench.platform.admin.auth import AuthConfig, Identity
from dabench.platform.mcp_server import build_mcp_server
from dabench.platform.service import PlatformService

API_KEY_ENV = "DABENCH_API_KEY"


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


def serve_stdio(service: PlatformService, identity: Identity) -> None:
    """Serve MCP over stdin/stdout until the client closes the pipe."""
    server = build_mcp_server(service, fixed_identity=identity)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        service.close()
