"""The in-memory API server's HTTP plumbing.

Role: `Usage` counts requests and response bytes by verb and resource and keeps the open
connections (so they can be cut); `HttpServer`/`Handler` hand each request of a connection's
thread to the function the server gives (`ApiServer`'s dispatch); `WatchStream` writes a watch's
chunked answer, counting its bytes as it goes.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from nodewright.inmemory.apiwire import CHUNK_EVENTS, Resource
from nodewright.ports import ApiUsage


class Usage:
    """Requests and response bytes by (verb, resource), and the open connections."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], list[int]] = {}
        self._connections: set[socket.socket] = set()

    def count(self, verb: str, resource: str, requests: int, size: int) -> None:
        """Add `requests` requests and `size` body bytes to (verb, resource)."""
        with self._lock:
            counts = self._counts.setdefault((verb, resource), [0, 0])
            counts[0] += requests
            counts[1] += size

    def usage(self) -> list[ApiUsage]:
        """Everything counted so far, sorted by verb and resource."""
        with self._lock:
            return [ApiUsage(verb, resource, n, size) for (verb, resource), (n, size) in sorted(self._counts.items())]

    def opened(self, connection: socket.socket) -> None:
        """A connection was accepted."""
        with self._lock:
            self._connections.add(connection)

    def closed(self, connection: socket.socket) -> None:
        """A connection ended."""
        with self._lock:
            self._connections.discard(connection)

    def cut(self) -> int:
        """Shut every open connection down (watches included); returns how many."""
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        return len(connections)


class WatchStream:
    """A chunked response of watch events, counted as the server's watch bytes."""

    def __init__(self, handler: Handler, usage: Usage, resource: Resource) -> None:
        self.handler = handler
        self.usage = usage
        self.resource = resource.plural

    def open(self) -> bool:
        """Send the headers of a chunked 200; False when the client has gone."""
        handler = self.handler
        self.usage.count("watch", self.resource, 1, 0)
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
        except OSError:
            handler.close_connection = True
            return False
        handler.streaming = True
        return True

    def send(self, lines: list[bytes]) -> bool:
        """Write the lines (in chunks); False when the client has gone."""
        try:
            for start in range(0, len(lines), CHUNK_EVENTS):
                data = b"".join(lines[start : start + CHUNK_EVENTS])
                self.usage.count("watch", self.resource, 0, len(data))
                self.handler.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
        except OSError:
            self.handler.close_connection = True
            return False
        return True

    def close(self) -> None:
        try:
            self.handler.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.handler.close_connection = True


class HttpServer(ThreadingHTTPServer):
    """Local HTTP, one thread per connection, each request handed to `serve(handler, method)`."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], serve: Callable[[Handler, str], None], usage: Usage) -> None:
        self.serve = serve
        self.usage = usage
        super().__init__(address, Handler)


class Handler(BaseHTTPRequestHandler):
    """One connection's requests, each passed to the server's `serve`."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: HttpServer
    streaming = False  # a watch's chunked answer has begun

    def setup(self) -> None:
        """Count the connection as open."""
        super().setup()
        self.server.usage.opened(self.connection)

    def finish(self) -> None:
        """Count the connection as closed."""
        try:
            super().finish()
        finally:
            self.server.usage.closed(self.connection)

    def do_GET(self) -> None:
        """Serve a GET."""
        self.server.serve(self, "GET")

    def do_POST(self) -> None:
        """Serve a POST."""
        self.server.serve(self, "POST")

    def do_PATCH(self) -> None:
        """Serve a PATCH."""
        self.server.serve(self, "PATCH")

    def do_PUT(self) -> None:
        """Serve a PUT."""
        self.server.serve(self, "PUT")

    def do_DELETE(self) -> None:
        """Serve a DELETE."""
        self.server.serve(self, "DELETE")

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the tests and the benchmark read `usage()`, not an access log."""
