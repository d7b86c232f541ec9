"""Static-key auth in the MCP authorization spec's terms: a 401 on ``/mcp`` points at the
protected-resource metadata (RFC 9728), which names no authorization server; the OAuth
discovery URLs and default endpoints answer 404 with the same explanation; a client holding
the key as a Bearer token is simply served."""

from __future__ import annotations

import httpx
import httpx2
import pytest
from mcp.client.auth.utils import (
    extract_field_from_www_auth,
    extract_resource_metadata_from_www_auth,
)
from platform_helpers import RunningPlatform, mcp_client

HOW = "Authorization: Bearer <key>"


def _challenge(platform: RunningPlatform, key: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    resp = httpx.post(platform.base_url + "/mcp", json={}, headers=headers, timeout=30)
    assert resp.status_code == 401
    return resp


def test_401_points_at_the_resource_metadata(platform_a2: RunningPlatform) -> None:
    for key in (None, "not-a-key-at-all"):
        resp = _challenge(platform_a2, key)
        header = resp.headers["www-authenticate"]
        assert header.startswith("Bearer ") and HOW in header
        # parsed the way the official SDK's OAuth client parses it
        as_sdk = httpx2.Response(401, headers={"WWW-Authenticate": header})
        url = extract_resource_metadata_from_www_auth(as_sdk)
        assert url == platform_a2.base_url + "/.well-known/oauth-protected-resource/mcp"
        # RFC 6750: no error code when no credentials were sent
        assert extract_field_from_www_auth(as_sdk, "error") == (key and "invalid_token")
        assert HOW in resp.json()["error"]["hint"]


@pytest.mark.parametrize("suffix", ["", "/mcp"])
def test_metadata_document_names_the_resource_and_no_authorization_server(
    platform_a2: RunningPlatform, suffix: str
) -> None:
    resp = httpx.get(platform_a2.base_url + "/.well-known/oauth-protected-resource" + suffix)
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/json"
    body = resp.json()
    assert body["resource"] == platform_a2.base_url + "/mcp"
    assert body["bearer_methods_supported"] == ["header"]
    assert body["authorization_servers"] == []
    assert HOW in body["dabench_authentication"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/.well-known/oauth-authorization-server"),
        ("GET", "/.well-known/oauth-authorization-server/mcp"),
        ("GET", "/.well-known/openid-configuration"),
        ("POST", "/register"),
        ("GET", "/authorize"),
        ("POST", "/token"),
    ],
)
def test_oauth_endpoints_explain_that_there_is_no_oauth(
    platform_a2: RunningPlatform, method: str, path: str
) -> None:
    resp = httpx.request(method, platform_a2.base_url + path, timeout=30)
    assert resp.status_code == 404
    body = resp.json()
    assert body["error"] == "no_authorization_server" and HOW in body["error_description"]


async def test_a_client_with_the_key_as_bearer_token_is_served(
    platform_a2: RunningPlatform,
) -> None:
    async with mcp_client(platform_a2, "teacher") as client:
        tools = await client.list_tools()
    assert "sql_query" in {t.name for t in tools.tools}
