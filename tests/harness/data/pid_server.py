"""A tiny stdio MCP server for the warm-pool tests: ``whoami`` answers its process id.
``--delay S`` sleeps S seconds before serving (a server that starts slowly); ``--started
FILE`` appends the process id to FILE once it serves (which processes were started).

    python pid_server.py [--delay S] [--started FILE]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer


def main() -> None:
    """Serve ``whoami`` over stdio."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--started", type=Path)
    args = parser.parse_args()
    time.sleep(args.delay)
    if args.started is not None:
        with args.started.open("a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
    server = MCPServer("pid-server")

    @server.tool(description="This server process's id.")
    def whoami() -> str:
        return str(os.getpid())

    server.run()


if __name__ == "__main__":
    main()
