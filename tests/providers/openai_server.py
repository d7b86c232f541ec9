"""A real OpenAI-compatible HTTP server process with a tiny scripted model, for end-to-end runs
of ``--model openai:<m> --base-url http://127.0.0.1:PORT/v1`` (llama.cpp's server and vLLM
are not installable here).

    python tests/providers/openai_server.py      # prints http://127.0.0.1:PORT/v1, serves

The model: when the request offers a tool taking ``sql`` (or ``query``) and no tool result
has come back yet, it calls that tool with ``SELECT 1``; otherwise it answers
``FINAL ANSWER: 1``. ``GET /v1/models`` lists it. Every request is logged to stderr as one
line, ``<path> <model> <messages>``.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.providers.servers import (  # after the path set-up above
    RecordedRequest,
    Reply,
    WireServer,
    openai_completion,
)

SQL_ARGUMENTS = ("sql", "query")


def _sql_tool(tools: list[dict[str, Any]]) -> tuple[str, str] | None:
    for tool in tools:
        function = tool.get("function") or {}
        properties = (function.get("parameters") or {}).get("properties") or {}
        for argument in SQL_ARGUMENTS:
            if argument in properties:
                return str(function.get("name")), argument
    return None


def scripted_model(request: RecordedRequest) -> Reply:
    """The tiny model behind ``/v1/chat/completions`` (and the ``/v1/models`` listing)."""
    if request.path.rstrip("/").endswith("/models"):
        return Reply(body={"object": "list", "data": [{"id": "tiny", "object": "model"}]})
    body = request.body if isinstance(request.body, dict) else {}
    messages = body.get("messages") or []
    model = str(body.get("model") or "tiny")
    print(f"{request.path} {model} {len(messages)}", file=sys.stderr, flush=True)
    tool = _sql_tool(body.get("tools") or [])
    answered = any(m.get("role") == "tool" for m in messages if isinstance(m, dict))
    if tool is not None and not answered:
        name, argument = tool
        arguments = json.dumps({argument: "SELECT 1"})
        return Reply(body=openai_completion(tool_calls=[("call_1", name, arguments)], model=model))
    return Reply(body=openai_completion("The result is 1.\nFINAL ANSWER: 1", model=model))


def main() -> None:
    """Serve until SIGTERM/SIGINT; the first stdout line is the base URL."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with WireServer(default=scripted_model) as server:
        print(f"{server.url}/v1", flush=True)
        stop.wait()


if __name__ == "__main__":
    main()
