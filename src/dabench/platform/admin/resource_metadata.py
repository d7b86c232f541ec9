"""Static-key auth the MCP authorization spec's clients understand (RFC 9728, RFC 6750).

The platform authenticates with static API keys, not OAuth. An OAuth-capable MCP client that
gets a bare 401 guesses an authorization server at the server's origin and starts a flow that
cannot succeed. So ``/mcp`` answers 401 with
``WWW-Authenticate: Bearer resource_metadata="<base>/.well-known/oauth-protected-resource/mcp"``
and serves that protected-resource metadata document (and the root variant): it names the
resource, accepts bearer tokens in the ``Authorization`` header only, and lists no
authorization server (RFC 9728 makes ``authorization_servers`` optional). The OAuth
authorization-server discovery URLs and the default OAuth endpoints (``/register``,
``/authorize``, ``/token``) answer 404 with a JSON body that says the same, so a client that
tries OAuth anyway (MCP Inspector does on any 401) stops at its first step with that
explanation. A client that sends the key as
``Authorization: Bearer <key>`` never sees any of this.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Scope

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MCP_PATH = "/mcp"
HOW = "send the platform's API key as: Authorization: Bearer <key> (the platform has no OAuth)"
"""What a client without a valid key is told (401 body, header and metadata)."""

_AUTH_SERVER_PATHS = (
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-authorization-server/mcp",
    "/.well-known/openid-configuration",
    "/.well-known/openid-configuration/mcp",
    "/mcp/.well-known/openid-configuration",
    "/register",
    "/authorize",
    "/token",
)
"""Where OAuth clients look for an authorization server when the metadata names none (the
server's origin, RFC 8414 and OpenID discovery, then the default endpoints)."""


def base_url(scope: Scope) -> str:
    """``scheme://host[:port]`` as the client addressed the server (its ``Host`` header)."""
    host = next((v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"host"), None)
    if host is None:
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


def metadata_url(scope: Scope) -> str:
    """The path-suffixed metadata URL of the ``/mcp`` resource (RFC 9728 section 3.1)."""
    return base_url(scope) + WELL_KNOWN + MCP_PATH


def challenge(scope: Scope, key_sent: bool) -> bytes:
    """The ``WWW-Authenticate`` value of a 401 on ``/mcp`` (RFC 6750 section 3: ``error``
    only when a key was sent and refused)."""
    parts = ['Bearer realm="dabench"']
    if key_sent:
        parts.append('error="invalid_token"')
    parts.append(f'error_description="{HOW}"')
    parts.append(f'resource_metadata="{metadata_url(scope)}"')
    return ", ".join(parts).encode("latin-1")


def metadata(scope: Scope) -> dict[str, object]:
    """The protected-resource metadata document of ``/mcp``."""
    return {
        "resource": base_url(scope) + MCP_PATH,
        "bearer_methods_supported": ["header"],
        "resource_name": "dabench reference platform (static API keys, no OAuth)",
        "authorization_servers": [],
        "dabench_authentication": HOW,
    }


async def _metadata(request: Request) -> Response:
    return JSONResponse(metadata(request.scope), headers={"cache-control": "no-store"})


async def _no_authorization_server(request: Request) -> Response:
    body = {"error": "no_authorization_server", "error_description": HOW}
    return JSONResponse(body, status_code=404)


def resource_metadata_routes() -> list[Route]:
    """``GET`` routes: the metadata document (root and ``/mcp``-suffixed) and the OAuth
    authorization-server discovery URLs (404 with the explanation)."""
    routes = [
        Route(WELL_KNOWN, _metadata, methods=["GET"]),
        Route(WELL_KNOWN + MCP_PATH, _metadata, methods=["GET"]),
    ]
    routes += [
        Route(p, _no_authorization_server, methods=["GET", "POST"]) for p in _AUTH_SERVER_PATHS
    ]
    return routes
