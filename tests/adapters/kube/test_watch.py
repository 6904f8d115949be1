"""The watcher's state machine against scripted watch streams (no HTTP here; the emulator tests
drive it over real HTTP).

Faked: the lister and the opener (each watch request answers with a scripted stream of JSON
lines, or a stream that breaks), and time (the watcher follows until a fake monotonic passes).
Observed: what lands in the store, the resourceVersion each watch starts from, and how many
LISTs and WATCHes were sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from urllib3.exceptions import ProtocolError

from nodewright.adapters.kube.store import PODS, ClusterStore, object_key
from nodewright.adapters.kube.watch import Watcher
from nodewright.model.pod import Pod


def manifest(name: str, version: int, *, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "resources": {"requests": {"cpu": "100m"}}}]}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": str(version)},
        "spec": spec,
        "status": {
            "phase": "Running" if node else "Pending",
            "conditions": [] if node else [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


def event(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


def bookmark(version: int) -> bytes:
    return event("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": str(version)}})


@dataclass
class Stream:
    """A raw response: its chunks, then either the end or a broken connection."""

    chunks: list[bytes]
    breaks: bool = False

    def stream(self, amt: Any = None, decode_content: bool = True) -> Iterator[bytes]:
        yield from self.chunks
        if self.breaks:
            raise ProtocolError("Connection broken: IncompleteRead")

    def shutdown(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


@dataclass
class Server:
    """Answers LISTs with `listing` and each WATCH with the next scripted stream; once the
    script is over, time runs out and the watcher stops.
    """

    listing: dict[str, Any]
    list_version: int
    script: list[Stream]
    now: list[float] = field(default_factory=lambda: [0.0])
    watched_from: list[str] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)

    def lister(self) -> tuple[dict[str, Any], str]:
        return {key: Pod.parse(obj) for key, obj in self.listing.items()}, str(self.list_version)

    def opener(self, resource_version: str, timeout: int) -> Stream:
        self.watched_from.append(resource_version)
        if not self.script:
            self.now[0] = 1e9
            self.done.set()
            return Stream([])
        return self.script.pop(0)


def follow(server: Server) -> tuple[Watcher, ClusterStore]:
    store = ClusterStore([PODS])
    watcher = Watcher(
        PODS,
        lister=server.lister,
        opener=server.opener,
        parse=Pod.parse,
        key=object_key,
        on_list=lambda objects: store.replace(PODS, objects),
        on_put=lambda key, obj: store.put(PODS, key, obj),
        on_delete=lambda key: store.delete(PODS, key),
        monotonic=lambda: server.now[0],
        backoff=0.001,
        max_backoff=0.002,
    )
    watcher.follow(until=100.0)
    assert server.done.wait(5), "the watcher never finished its script"
    watcher.close()
    return watcher, store


def test_one_list_then_watches_that_resume_from_the_last_version_seen() -> None:
    server = Server(
        listing={"default/a": manifest("a", 5, node="n1")},
        list_version=10,
        script=[
            Stream([event("ADDED", manifest("b", 11)), bookmark(14)]),
            Stream([event("MODIFIED", manifest("b", 15, node="n1")), event("DELETED", manifest("a", 16))]),
        ],
    )
    watcher, store = follow(server)
    assert watcher.lists == 1
    assert server.watched_from == ["10", "14", "16"]
    assert [(p.name, p.node_name) for p in store.snapshot().pods] == [("b", "n1")]
    assert store.pending() == []


def test_a_410_in_the_stream_relists_once_and_watches_from_the_new_list() -> None:
    gone = event("ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"})
    server = Server(listing={"default/a": manifest("a", 5)}, list_version=10, script=[Stream([gone])])
    watcher, store = follow(server)
    assert watcher.lists == 2
    assert server.watched_from == ["10", "10"]
    assert [p.name for p in store.pending()] == ["a"]


def test_a_dropped_connection_resumes_from_the_last_version_without_a_list() -> None:
    server = Server(
        listing={},
        list_version=10,
        script=[Stream([event("ADDED", manifest("b", 12)), b'{"type": "MODI'], breaks=True)],
    )
    watcher, store = follow(server)
    assert watcher.lists == 1
    assert server.watched_from == ["10", "12"]
    assert [p.name for p in store.pending()] == ["b"]


def test_an_object_the_model_cannot_read_is_left_out_and_reported_while_the_rest_applies() -> None:
    broken = manifest("bad", 11)
    broken["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    server = Server(
        listing={}, list_version=10, script=[Stream([event("ADDED", broken), event("ADDED", manifest("ok", 12))])]
    )
    watcher, store = follow(server)
    assert [p.name for p in store.pending()] == ["ok"]
    assert watcher.error is not None
    assert "default/bad" in str(watcher.error)
