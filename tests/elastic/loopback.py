"""The threaded 127.0.0.1 HTTP server the fake Elastic services run on."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler
from typing import Self

from tests.quiet_http import QuietThreadingHTTPServer


class LoopbackServer:
    """A threaded HTTP server on an ephemeral loopback port; use as a context manager.
    Subclasses build their request handler class in :meth:`_handler`."""

    def __init__(self) -> None:
        self._server = QuietThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
