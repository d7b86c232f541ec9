"""A small third-party-style MCP server for the tool-role tests (not the reference platform).

Its tools have other names and arguments than the reference platform's: ``execute_query``
(``statement``, no row limit), ``table_schema`` (``name``) and ``show_tables`` (no
arguments). It serves a world's warehouse opened read-only with the official MCP SDK over
stdio, or with ``--port`` over streamable HTTP at ``/mcp`` (refusing requests without
``Authorization: Bearer <--token>`` when a token is given); ``--format markdown`` answers
queries with a markdown table instead of JSON rows, ``--format python`` with
``str(cursor.fetchall())`` as mcp-server-duckdb does (no column names), ``--format envelope``
with rows under ``payload.batches[0].tuples`` (which the reader does not guess), ``--format fixed``
with the text of ``--fixed FILE`` whatever the query (for unreadable results).
``--warehouse-env NAME`` reads the warehouse path from that environment variable instead.

    python roles_server.py WAREHOUSE.duckdb [--format json|markdown|python|envelope|fixed]
        [--port N [--token T]]
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import os
from pathlib import Path
from typing import Any

import duckdb
import uvicorn
from mcp.server.mcpserver import MCPServer


def _plain(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    return value


def _markdown(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = ["NULL" if v is None else str(_plain(v)) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    """Serve the warehouse over stdio."""
    parser = argparse.ArgumentParser()
    parser.add_argument("warehouse", nargs="?")
    parser.add_argument("--warehouse-env", default=None)
    parser.add_argument(
        "--format", choices=["json", "markdown", "python", "envelope", "fixed"], default="json"
    )
    parser.add_argument("--fixed", default=None)
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--token", default=None)
    args = parser.parse_args()
    warehouse = os.environ[args.warehouse_env] if args.warehouse_env else args.warehouse
    fixed = Path(args.fixed).read_text(encoding="utf-8") if args.fixed else ""
    con = duckdb.connect(warehouse, read_only=True, config={"enable_external_access": False})
    server = MCPServer("roles-test-server")

    def run(sql: str, params: list[Any] | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
        cur = con.cursor()
        try:
            result = cur.execute(sql, params or [])
            columns = [d[0] for d in result.description or []]
            return columns, result.fetchall()
        finally:
            cur.close()

    @server.tool(
        description="Execute a SQL statement against the DuckDB database and return the rows.",
        structured_output=False,
    )
    def execute_query(statement: str) -> str:
        if args.format == "fixed":
            return fixed
        columns, rows = run(statement)
        if args.format == "python":
            return str(rows)
        if args.format == "envelope":
            tuples = [[_plain(v) for v in r] for r in rows]
            return json.dumps({"payload": {"batches": [{"names": columns, "tuples": tuples}]}})
        if args.format == "markdown":
            return _markdown(columns, rows)
        return json.dumps([{c: _plain(v) for c, v in zip(columns, r, strict=True)} for r in rows])

    @server.tool(description="Column names and types of a table (schema.table).")
    def table_schema(name: str) -> str:
        schema, _, table = name.rpartition(".")
        columns, rows = run(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
            [schema or "main", table],
        )
        if not rows:
            raise ValueError(f"no table {name}")
        return json.dumps([dict(zip(columns, r, strict=True)) for r in rows])

    @server.tool(description="Names of all tables in the database.")
    def show_tables() -> str:
        _, rows = run(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables ORDER BY 1"
        )
        return "\n".join(r[0] for r in rows)

    if args.port is None:
        server.run()
        return
    app = server.streamable_http_app()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        wanted = f"Bearer {args.token}".encode()
        if scope["type"] == "http" and args.token and headers.get(b"authorization") != wanted:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
            return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
