"""The loopback HTTP client against a real HTTP/1.1 server: content-length, chunked,
connection close, reuse of kept-alive connections, and nothing listening."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from tests.quiet_http import QuietThreadingHTTPServer

from dabench.errors import HarnessError
from dabench.targets.loopback_http import LoopbackHttp
from dabench.targets.process import free_port


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    connections: ClassVar[set[int]] = set()
    served = 0
    """Requests answered on this connection (one handler instance per connection)."""

    def do_POST(self) -> None:
        Handler.connections.add(id(self.connection))
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.served += 1
        if self.path == "/drop-if-reused" and self.served > 1:
            self.close_connection = True  # as a server closing an idle connection: no reply
            return
        if self.path == "/half":
            self.send_response(200)
            self.send_header("Content-Length", "10")
            self.end_headers()
            self.wfile.write(b"abc")
            self.close_connection = True
            return
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"hello ", body):
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.path == "/close":
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    srv = QuietThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    thread.join()


async def test_requests_reuse_and_chunks(server: ThreadingHTTPServer) -> None:
    Handler.connections.clear()
    http = LoopbackHttp(f"http://127.0.0.1:{server.server_address[1]}")
    try:
        for i in range(5):
            resp = await http.request("POST", "/echo", body=f'{{"n": {i}}}'.encode())
            assert (resp.status, resp.body, resp.content_type) == (
                201,
                f'{{"n": {i}}}'.encode(),
                "application/json",
            )
        assert len(Handler.connections) == 1  # one kept-alive connection served all five
        chunked = await http.request("POST", "/chunked", body=b"world")
        assert chunked.body == b"hello world"
        closed = await http.request("POST", "/close", body=b"x")
        assert closed.body == b"x" and not http._idle
        again = await http.request("POST", "/echo", body=b"y", params={"a": 1})
        assert again.body == b"y"
    finally:
        await http.aclose()


async def test_nothing_listening_is_a_harness_error() -> None:
    http = LoopbackHttp(f"http://127.0.0.1:{free_port()}")
    with pytest.raises(HarnessError, match=r"cannot connect to http://127\.0\.0\.1"):
        await http.request("POST", "/echo", body=b"2")
    await http.aclose()
    with pytest.raises(HarnessError, match="plain http only"):
        LoopbackHttp("https://example.org")


async def test_reused_connection_closed_unanswered_is_resent_on_a_new_one(
    server: ThreadingHTTPServer,
) -> None:
    """The race a client idle limit cannot rule out: the server closes the connection as
    the request goes out. The request is sent once more, on a new connection."""
    http = LoopbackHttp(f"http://127.0.0.1:{server.server_address[1]}")
    try:
        await http.request("POST", "/echo", body=b"1")
        resp = await http.request("POST", "/drop-if-reused", body=b"2")
        assert (resp.status, resp.body) == (201, b"2")
        assert (http.stats.opened, http.stats.reused, http.stats.resent) == (2, 1, 1)
    finally:
        await http.aclose()


async def test_a_partly_received_response_is_never_resent(server: ThreadingHTTPServer) -> None:
    http = LoopbackHttp(f"http://127.0.0.1:{server.server_address[1]}")
    try:
        await http.request("POST", "/echo", body=b"1")
        with pytest.raises(HarnessError, match=r"POST http://127\.0\.0\.1:\d+/half failed"):
            await http.request("POST", "/half", body=b"2")
        assert http.stats.resent == 0
    finally:
        await http.aclose()
