"""A threading HTTP server for test stubs that keeps its handler errors to itself.

``socketserver`` prints a handler's exception (a client that hung up, say) to ``sys.stderr``,
from the handler's thread, whenever it happens. Under pytest-xdist that can be during another
test's ``CliRunner`` capture in the same process, which then sees a traceback in a command's
output. The stubs record the errors in ``errors`` instead.
"""

from __future__ import annotations

import sys
import traceback
from http.server import ThreadingHTTPServer
from typing import Any


class QuietThreadingHTTPServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` whose handler errors go to ``errors``, not to stderr."""

    daemon_threads = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.errors: list[str] = []

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Record the current exception with the client's address."""
        self.errors.append(f"{client_address}: {traceback.format_exception(*sys.exc_info())}")
