"""An in-memory `nodewright.ports.StateStore`: the DynamoDB state table's stand-in for tests and `simulate`.

Role: the same contract as `nodewright.adapters.aws.state_store.DynamoStateStore`, checked by
the same tests (tests/adapters/test_state_store_contract.py), so a controller test against this
store says something about the real one:
  * `create_claim` adds a claim only when none of that name exists; `save_claim` overwrites;
    `claims()` lists them sorted by name; `delete_claim` of a missing claim is fine.
  * a lease is free when absent, expired (`expires <= now`) or already held by the caller;
    `release_lease` only removes it for its holder.
  * `block_offerings` never shortens a block; `blocked_offerings(now)` returns blocks with
    `until > now` (expired ones are dropped on read, as the DynamoDB store filters them).
  * one drain record per chain (`DrainRecord.chain`), overwritten by `save_drain`;
    `drain_record(chain, now)` returns it only while `expires > now`.

What is faked: DynamoDB's per-item atomic conditional writes, with one lock around every
method, so controllers racing in threads see exactly one winner. What is not faked: TTL deletion
(expired entries just stop counting), item size limits and throttling.

Claims are stored as copies (their `labels` dict copied in and out), because the real store
keeps a serialised record: a caller that mutates a claim's labels after saving it must not
change what is stored.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from nodewright.model.command import CommandRecord
from nodewright.model.instancetype import OfferingKey
from nodewright.model.nodeclaim import NodeClaim
from nodewright.ports import DrainRecord

if TYPE_CHECKING:
    from nodewright.ports import StateStore


def _copy(claim: NodeClaim) -> NodeClaim:
    return replace(claim, labels=dict(claim.labels))


class InMemoryStateStore:
    """A thread-safe `nodewright.ports.StateStore` held in dicts; see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claims: dict[str, NodeClaim] = {}
        # lease name -> (holder, expires)
        self._leases: dict[str, tuple[str, float]] = {}
        self._blocked: dict[OfferingKey, float] = {}
        self._commands: dict[str, CommandRecord] = {}
        self._drains: dict[str, DrainRecord] = {}

    def create_claim(self, claim: NodeClaim) -> bool:
        """Record a claim before its launch; False (and no change) when one of that name exists."""
        with self._lock:
            if claim.name in self._claims:
                return False
            self._claims[claim.name] = _copy(claim)
            return True

    def save_claim(self, claim: NodeClaim) -> None:
        """Overwrite a claim's record (creating it if it is missing)."""
        with self._lock:
            self._claims[claim.name] = _copy(claim)

    def claims(self) -> list[NodeClaim]:
        """Every recorded claim, sorted by name."""
        with self._lock:
            return [_copy(self._claims[name]) for name in sorted(self._claims)]

    def delete_claim(self, name: str) -> None:
        """Remove a claim's record; a missing one counts as removed."""
        with self._lock:
            self._claims.pop(name, None)

    def acquire_lease(self, name: str, holder: str, now: float, ttl: float) -> bool:
        """Take or renew the lease `name` for `holder` until now + ttl; False while another
        holder's lease has not expired (expires > now).
        """
        with self._lock:
            current = self._leases.get(name)
            if current is not None and current[0] != holder and current[1] > now:
                return False
            self._leases[name] = (holder, now + ttl)
            return True

    def release_lease(self, name: str, holder: str) -> None:
        """Give the lease up if `holder` still has it; otherwise do nothing."""
        with self._lock:
            current = self._leases.get(name)
            if current is not None and current[0] == holder:
                del self._leases[name]

    def block_offerings(self, offerings: Iterable[OfferingKey], until: float) -> None:
        """Remember that these offerings failed, until `until`; a later block is never shortened."""
        with self._lock:
            for offering in offerings:
                self._blocked[offering] = max(until, self._blocked.get(offering, until))

    def blocked_offerings(self, now: float) -> frozenset[OfferingKey]:
        """Offerings still blocked at `now` (until > now)."""
        with self._lock:
            return frozenset(o for o, until in self._blocked.items() if until > now)

    def save_command(self, record: CommandRecord) -> None:
        """Write a disruption command's record."""
        with self._lock:
            self._commands[record.id] = record

    def commands(self) -> list[CommandRecord]:
        """Every command record, oldest first."""
        with self._lock:
            return sorted(self._commands.values(), key=lambda r: (r.created_at, r.id))

    def delete_command(self, command_id: str) -> None:
        """Remove a command's record; a missing one counts as removed."""
        with self._lock:
            self._commands.pop(command_id, None)

    def save_drain(self, record: DrainRecord) -> None:
        """Write the record of the drain chain `record.chain` (create or overwrite)."""
        with self._lock:
            self._drains[record.chain] = record

    def drain_record(self, chain: str, now: float) -> DrainRecord | None:
        """The record of this drain chain, or None when absent or expired (expires <= now)."""
        with self._lock:
            record = self._drains.get(chain)
            return record if record is not None and record.expires > now else None

    def delete_drain(self, chain: str) -> None:
        """Remove the record of this drain chain; a missing one counts as removed."""
        with self._lock:
            self._drains.pop(chain, None)

    def lease_holder(self, name: str, now: float) -> str | None:
        """Who holds the lease `name` at `now`, or None (for tests and the simulator; not a port method)."""
        with self._lock:
            current = self._leases.get(name)
            return current[0] if current is not None and current[1] > now else None


if TYPE_CHECKING:
    # Static proof that the fake satisfies the port (checked by mypy --strict, never run).
    _store: StateStore = InMemoryStateStore()

__all__ = ["InMemoryStateStore"]
