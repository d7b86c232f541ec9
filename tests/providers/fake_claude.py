#!/usr/bin/env python3
"""A stand-in for the ``claude`` CLI used by test_claude_cli.py (copied onto PATH as ``claude``).

It records its argv, stdin and the MCP config it was given into ``$FAKE_CLAUDE_RECORD`` and
emits documented stream-json events according to ``$FAKE_CLAUDE_MODE``.
"""

import json
import os
import sys
import time


def emit(event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main():
    argv = sys.argv[1:]
    prompt = sys.stdin.read()
    config_path = argv[argv.index("--mcp-config") + 1]
    with open(config_path, encoding="utf-8") as handle:
        config = json.load(handle)
    with open(os.environ["FAKE_CLAUDE_RECORD"], "w", encoding="utf-8") as handle:
        json.dump({"argv": argv, "prompt": prompt, "mcp_config": config}, handle)
    mode = os.environ.get("FAKE_CLAUDE_MODE", "success")
    if mode == "crash":
        sys.stderr.write("Error: Invalid API key. Please run /login\n")
        return 1
    if mode == "crash-overloaded":
        sys.stderr.write('API Error: 529 {"type":"overloaded_error"}\n')
        return 1
    if mode == "hang":
        time.sleep(60)
        return 0
    emit(
        {
            "type": "system",
            "subtype": "init",
            "session_id": "sess-1",
            "model": "claude-sonnet-4-6",
            "tools": ["mcp__dabench__sql_query"],
            "mcp_servers": [
                {"name": "dabench", "status": "failed" if mode == "mcp_failed" else "connected"}
            ],
        }
    )
    sys.stdout.write("not json: a stray warning line\n")
    emit(
        {
            "type": "assistant",
            "session_id": "sess-1",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [
                    {"type": "text", "text": "Let me query."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "mcp__dabench__sql_query",
                        "input": {"sql": "SELECT 42"},
                    },
                ],
            },
        }
    )
    emit(
        {
            "type": "user",
            "session_id": "sess-1",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "42"}],
                        "is_error": False,
                    }
                ],
            },
        }
    )
    if mode == "max_turns":
        emit(
            {
                "type": "result",
                "subtype": "error_max_turns",
                "is_error": True,
                "num_turns": 2,
                "duration_ms": 1200,
                "session_id": "sess-1",
                "total_cost_usd": 0.01,
                "usage": {"input_tokens": 10, "output_tokens": 3},
            }
        )
        return 1
    if mode == "api_error":
        emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "result": "API Error: 529 Overloaded",
                "num_turns": 1,
                "session_id": "sess-1",
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
        )
        return 1
    if mode == "execution_error":
        emit(
            {
                "type": "result",
                "subtype": "error_during_execution",
                "is_error": True,
                "num_turns": 1,
                "session_id": "sess-1",
                "errors": ["tool crashed"],
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        )
        return 1
    emit(
        {
            "type": "assistant",
            "session_id": "sess-1",
            "message": {
                "id": "msg_2",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [{"type": "text", "text": "The answer is 42."}],
            },
        }
    )
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "The answer is 42.",
        "num_turns": 2,
        "duration_ms": 3456,
        "duration_api_ms": 3000,
        "session_id": "sess-1",
        "usage": {
            "input_tokens": 120,
            "output_tokens": 30,
            "cache_creation_input_tokens": 1000,
            "cache_read_input_tokens": 2000,
        },
    }
    if mode != "no_cost":
        result["total_cost_usd"] = 0.0234
    emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
