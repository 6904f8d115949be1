"""NodeClaim objects held in memory: `nodewright.ports.ClaimObjects` for tests and the simulator.

Role: what the API server would hold for the `nodeclaims.nodewright.io` resource, with its
rules where the mirror depends on them: a create of an existing name answers a conflict, a merge
patch of a missing one answers not-found (the port's contract turns both into the other write),
a delete of a missing one is a no-op, the server stamps `resourceVersion` and `uid`. `installed`
False answers like a cluster without the CRD (the LIST finds no such resource). Every call is
counted by verb in `requests`, so tests and the simulator can say what the mirror costs.
"""

from __future__ import annotations

import collections
import copy
import itertools
from collections.abc import Mapping
from typing import Any

from nodewright.sim.apiserver import _merge


class InMemoryClaimObjects:
    """`ClaimObjects` over a dict (see the module docstring)."""

    def __init__(self, *, installed: bool = True) -> None:
        self.installed = installed
        self.objects: dict[str, dict[str, Any]] = {}
        self.requests: collections.Counter[str] = collections.Counter()
        self._versions = itertools.count(1)

    def claim_objects(self) -> dict[str, dict[str, Any]] | None:
        """Every object by name, or None when the CRD is not installed."""
        self.requests["list"] += 1
        if not self.installed:
            return None
        return copy.deepcopy(self.objects)

    def put_claim_object(self, manifest: Mapping[str, Any], *, exists: bool) -> dict[str, Any]:
        """Create or merge-patch (see `nodewright.ports.ClaimObjects`)."""
        name = str(manifest["metadata"]["name"])
        self.requests["patch" if exists else "create"] += 1
        stored = self.objects.get(name)
        if stored is None:
            body = copy.deepcopy(dict(manifest))
            body["metadata"]["uid"] = f"uid-{name}"
        else:
            body = _merge(stored, copy.deepcopy(dict(manifest)))
        body["metadata"]["resourceVersion"] = str(next(self._versions))
        self.objects[name] = body
        return copy.deepcopy(body)

    def delete_claim_object(self, name: str) -> None:
        """Remove the object; a missing one counts as removed."""
        self.requests["delete"] += 1
        self.objects.pop(name, None)
