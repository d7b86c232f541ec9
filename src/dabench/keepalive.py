"""Keep-alive limits shared by every HTTP client of the harness and the servers it starts.

A server closes a keep-alive connection that stayed idle longer than its keep-alive
(uvicorn, and therefore the reference platform, vLLM and most Python servers: 5 s; Node,
Kibana's default: 5 s / 120 s). A client that reuses such a connection a moment before or
after the server closes it sends a request nobody will answer. The harness therefore closes
an idle pooled connection itself before the server's keep-alive runs out: its idle limit is
:data:`CLIENT_IDLE_FRACTION` of the server's keep-alive when the harness knows it (servers it
starts), else :data:`DEFAULT_CLIENT_IDLE_S`, below the shortest common keep-alive.
"""

from __future__ import annotations

SERVER_KEEP_ALIVE_S = 5.0
"""Keep-alive of the servers the harness starts (the reference platform; uvicorn's default)."""

CLIENT_IDLE_FRACTION = 0.8
"""A client drops an idle connection after this fraction of the server's keep-alive."""

DEFAULT_CLIENT_IDLE_S = 4.0
"""Idle limit towards servers whose keep-alive is unknown (MCP servers, model APIs, Kibana):
below the 5 s of uvicorn, Node's ``http`` server and llama.cpp's server."""


def client_idle_limit(server_keep_alive_s: float) -> float:
    """The client idle limit for a server whose keep-alive is ``server_keep_alive_s``."""
    return server_keep_alive_s * CLIENT_IDLE_FRACTION
