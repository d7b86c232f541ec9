"""A local HTTP server implementing just enough of the Elasticsearch REST contract for the
official client's index and bulk calls.

``HEAD/PUT/DELETE /<index>`` (create with ``mappings``; field ``meta`` limits and strict
dynamic mappings enforced), ``GET /<index>/_mapping``, ``POST /<index>/_refresh`` and
``PUT|POST /_bulk`` (NDJSON, per-item results: 201 created / 200 updated / 400 refused) and
``GET|POST /<index>/_search`` (``match_all``, ``size``, ``sort`` on top-level fields).
Every response carries ``X-Elastic-Product: Elasticsearch`` (the client checks it).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from .loopback import LoopbackServer

ES_TYPES = {"long", "double", "boolean", "date", "keyword", "text", "integer", "float", "object"}


def check_mapping(mappings: dict[str, Any]) -> str | None:
    """Why Elasticsearch would refuse the mapping (``None`` when it is valid)."""
    meta = mappings.get("_meta", {})
    if not isinstance(meta, dict):
        return "[_meta] must be an object"
    for name, prop in mappings.get("properties", {}).items():
        if prop.get("type") not in ES_TYPES:
            return f"No handler for type [{prop.get('type')}] declared on field [{name}]"
        field_meta = prop.get("meta", {})
        if len(field_meta) > 5:
            return f"[meta] can't have more than 5 entries, on field [{name}]"
        for key, value in field_meta.items():
            if len(key) > 20 or not isinstance(value, str) or len(value) > 50:
                return f"[meta] invalid entry [{key}] on field [{name}]"
    return None


class FakeElasticsearch(LoopbackServer):
    """The server; use as a context manager. ``indices`` maps name -> mappings and docs."""

    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.indices: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self.bulk_requests = 0
        self.refuse_ids: set[str] = set()
        """Document ids the bulk API refuses (to test per-item errors)."""
        self._lock = threading.Lock()
        super().__init__()

    def docs(self, index: str) -> dict[str, dict[str, Any]]:
        """The documents of an index by id."""
        return dict(self.indices[index]["docs"])

    def _bulk(self, raw: bytes) -> dict[str, Any]:
        lines = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
        items, errors = [], False
        with self._lock:
            self.bulk_requests += 1
            for action, source in zip(lines[::2], lines[1::2], strict=True):
                op, meta = next(iter(action.items()))
                index, doc_id = meta["_index"], meta["_id"]
                entry = self.indices.get(index)
                status, result, error = 201, "created", None
                props = entry["mappings"].get("properties", {}) if entry else {}
                unknown = sorted(set(source) - set(props))
                if entry is None:
                    status, error = 404, {"type": "index_not_found_exception"}
                elif doc_id in self.refuse_ids:
                    status, error = 400, {"type": "document_parsing_exception", "reason": "no"}
                elif unknown and entry["mappings"].get("dynamic") == "strict":
                    error = {"type": "strict_dynamic_mapping_exception",
                             "reason": f"unknown field [{unknown[0]}]"}  # fmt: skip
                    status = 400
                else:
                    if doc_id in entry["docs"]:
                        status, result = 200, "updated"
                    entry["docs"][doc_id] = source
                item: dict[str, Any] = {"_index": index, "_id": doc_id, "status": status}
                if error:
                    item["error"] = error
                    errors = True
                else:
                    item["result"] = result
                items.append({op: item})
        return {"took": 1, "errors": errors, "items": items}

    def _search(self, index: str, raw: bytes) -> dict[str, Any]:
        body = json.loads(raw or b"{}")
        query = body.get("query", {"match_all": {}})
        if query != {"match_all": {}}:
            raise ValueError(f"the fake supports match_all only, not {query}")
        docs = list(self.indices[index]["docs"].items())
        for spec in reversed(body.get("sort", [])):
            ((name, order),) = spec.items()
            order = order["order"] if isinstance(order, dict) else order
            docs.sort(key=lambda d, n=name: str(d[1].get(n, "")), reverse=order == "desc")
        hits = [{"_index": index, "_id": i, "_source": s} for i, s in docs]
        size = int(body.get("size", 10))
        total = {"value": len(hits), "relation": "eq"}
        return {"took": 1, "timed_out": False, "hits": {"total": total, "hits": hits[:size]}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _send(self, status: int, body: Any = None, head: bool = False) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("X-Elastic-Product", "Elasticsearch")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "0" if head else str(len(data)))
                self.end_headers()
                if not head:
                    self.wfile.write(data)

            def _error(self, status: int, kind: str, reason: str) -> None:
                err = {"type": kind, "reason": reason}
                self._send(status, {"error": {"root_cause": [err], **err}, "status": status})

            def _route(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                path = self.path.split("?")[0]
                fake.requests.append((method, path))
                if fake.api_key and self.headers.get("Authorization") != f"ApiKey {fake.api_key}":
                    return self._error(401, "security_exception", "missing authentication")
                parts = [p for p in path.split("/") if p]
                if parts == ["_bulk"] and method in ("POST", "PUT"):
                    return self._send(200, fake._bulk(raw))
                if len(parts) == 1:
                    name = parts[0]
                    if method == "HEAD":
                        return self._send(200 if name in fake.indices else 404, head=True)
                    if method == "PUT":
                        if name in fake.indices:
                            return self._error(400, "resource_already_exists_exception", name)
                        mappings = json.loads(raw or b"{}").get("mappings", {})
                        problem = check_mapping(mappings)
                        if problem:
                            return self._error(400, "mapper_parsing_exception", problem)
                        fake.indices[name] = {"mappings": mappings, "docs": {}}
                        return self._send(200, {"acknowledged": True, "index": name})
                    if method == "DELETE":
                        fake.indices.pop(name, None)
                        return self._send(200, {"acknowledged": True})
                if len(parts) == 2 and parts[0] in fake.indices:
                    if parts[1] == "_mapping" and method == "GET":
                        return self._send(
                            200, {parts[0]: {"mappings": fake.indices[parts[0]]["mappings"]}}
                        )
                    if parts[1] == "_refresh":
                        return self._send(200, {"_shards": {"total": 1, "successful": 1}})
                    if parts[1] == "_search" and method in ("GET", "POST"):
                        return self._send(200, fake._search(parts[0], raw))
                if parts and parts[0] not in fake.indices:
                    return self._error(404, "index_not_found_exception", parts[0])
                return self._error(400, "illegal_argument_exception", f"{method} {path}")

            def do_HEAD(self) -> None:
                self._route("HEAD")

            def do_GET(self) -> None:
                self._route("GET")

            def do_PUT(self) -> None:
                self._route("PUT")

            def do_POST(self) -> None:
                self._route("POST")

            def do_DELETE(self) -> None:
                self._route("DELETE")

        return Handler
