"""A real uvicorn server with a configurable keep-alive, for the idle-connection tests.

``python -m tests.harness.keepalive_server PORT KEEP_ALIVE_S`` serves on 127.0.0.1:
``POST .../chat/completions`` (an OpenAI chat completion), ``POST .../messages`` (an
Anthropic message), ``GET /api/status`` (Kibana's status) and anything else as an echo of the
method, path and body. uvicorn closes keep-alive connections idle ``KEEP_ALIVE_S`` seconds.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import uvicorn
from tests.providers.servers import anthropic_message, openai_completion

KIBANA_STATUS = {"version": {"number": "9.3.0"}, "status": {"overall": {"level": "available"}}}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answer one HTTP request (see the module docstring)."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    path = scope["path"]
    payload: Any
    if path.endswith("/chat/completions"):
        payload = openai_completion("ok")
    elif path.endswith("/messages"):
        payload = anthropic_message("ok")
    elif path == "/api/status":
        payload = KIBANA_STATUS
    else:
        payload = {"method": scope["method"], "path": path, "body": body.decode()}
    data = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def main() -> None:
    """Serve until killed."""
    port, keep_alive = int(sys.argv[1]), float(sys.argv[2])
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        timeout_keep_alive=keep_alive,  # type: ignore[arg-type]  # a float works
        lifespan="off",
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
