"""A moto server on a free local port, started from empty backends, for tests that drive the CLI
or botocore over HTTP.

moto keeps its backends in module globals, so a server started in a process where another test
already created a stack or a cluster would see them (pytest-xdist runs many modules in one worker).
`moto_server()` resets the backends when it starts and when it stops, so no test sees another's
resources whatever order the workers run them in.
"""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from moto.server import ThreadedMotoServer


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _reset(endpoint: str) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")).close()


@contextmanager
def moto_server() -> Iterator[str]:
    """Serve moto on a free port with empty backends; yield its endpoint URL; stop and reset after."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _reset(endpoint)
        yield endpoint
    finally:
        try:
            _reset(endpoint)
        finally:
            server.stop()
