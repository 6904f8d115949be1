"""The in-memory API server's HTTP plumbing and the state its parts share.

Role: `ServerState` declares what `ApiServer` (`nodewright.inmemory.apiserver`) keeps, so its reads
(`apireads`) and writes (`apiwrites`) can be written as parts of it, and counts requests and
bytes (`usage()`); `_Handler` hands each request of a connection's thread to `ApiServer._serve`;
`_Stream` writes a watch's chunked answer, counting its bytes as it goes.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from nodewright.inmemory.apiwire import (
    _CHUNK_EVENTS,
    Resource,
    _Kind,
    _Listing,
)
from nodewright.inmemory.cluster import InMemoryCluster

if TYPE_CHECKING:
    from nodewright.inmemory.apiserver import ApiServer


class ServerState:
    """The attributes `ApiServer.__init__` sets that its reads and writes use, and the counter
    of requests and bytes by verb and resource.
    """

    cluster: InMemoryCluster
    lock: threading.RLock
    _bookmark_every: float
    _changed: threading.Condition
    _kinds: dict[str, _Kind]
    _revision: int
    _lists: collections.OrderedDict[int, _Listing]
    _list_ids: Iterator[int]
    _usage: dict[tuple[str, str], list[int]]
    _usage_lock: threading.Lock
    _stopping: bool
    _watching: int

    def _count(self, verb: str, resource: str, requests: int, size: int) -> None:
        with self._usage_lock:
            counts = self._usage.setdefault((verb, resource), [0, 0])
            counts[0] += requests
            counts[1] += size


class _Stream:
    """A chunked response of watch events, counted as the server's watch bytes."""

    def __init__(self, handler: _Handler, server: ServerState, resource: Resource) -> None:
        self.handler = handler
        self.server = server
        self.resource = resource.plural

    def open(self) -> bool:
        """Send the headers of a chunked 200; False when the client has gone."""
        handler = self.handler
        self.server._count("watch", self.resource, 1, 0)
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
            for start in range(0, len(lines), _CHUNK_EVENTS):
                data = b"".join(lines[start : start + _CHUNK_EVENTS])
                self.server._count("watch", self.resource, 0, len(data))
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


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], api: ApiServer) -> None:
        self.api = api
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HttpServer
    streaming = False  # a watch's chunked answer has begun

    def setup(self) -> None:
        super().setup()
        self.server.api._opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.api._closed(self.connection)

    def do_GET(self) -> None:
        self.server.api._serve(self, "GET")

    def do_POST(self) -> None:
        self.server.api._serve(self, "POST")

    def do_PATCH(self) -> None:
        self.server.api._serve(self, "PATCH")

    def do_PUT(self) -> None:
        self.server.api._serve(self, "PUT")

    def do_DELETE(self) -> None:
        self.server.api._serve(self, "DELETE")

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the tests and the benchmark read `usage()`, not an access log."""
