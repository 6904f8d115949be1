"""A disruption command in progress: the consolidator's durable record of one command. Pure data.

The consolidator writes it before each effect and advances `state` after it, so an invocation
that dies anywhere leaves a record the next one resumes from (or rolls back):

    computed    decided, not yet re-validated; nothing was done (resume: drop it, decide again)
    launching   replacement claim names chosen and recorded; launches may have happened
    tainted     replacements launched, candidates cordoned with the disrupted taint
    draining    replacements Ready; evicting the candidates' pods
    terminating drained; terminating instances, deleting Nodes and claims

A record is deleted when its command is done or abandoned (after the candidates are untainted).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from nodewright.model.errors import InvalidValue

STATES = ("computed", "launching", "tainted", "draining", "terminating")


@dataclass(frozen=True, slots=True)
class CommandRecord:
    """One disruption command and how far it got (see the module docstring)."""

    id: str
    method: str
    reason: str
    candidates: tuple[str, ...]
    instance_ids: tuple[str, ...]
    replacements: tuple[str, ...] = ()
    state: str = "computed"
    savings: float = 0.0
    detail: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0
    budgeted: bool = True

    def advanced(self, state: str, now: float, **changes: Any) -> CommandRecord:
        """A copy in `state`, stamped `now`."""
        return replace(self, state=state, updated_at=now, **changes)

    def to_json(self) -> str:
        """The record as compact JSON."""
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> CommandRecord:
        """Read `to_json`'s form; InvalidValue naming the problem when it cannot."""
        try:
            data = json.loads(text)
            record = cls(
                id=str(data["id"]),
                method=str(data["method"]),
                reason=str(data["reason"]),
                candidates=tuple(str(c) for c in data["candidates"]),
                instance_ids=tuple(str(i) for i in data["instance_ids"]),
                replacements=tuple(str(r) for r in data.get("replacements", ())),
                state=str(data.get("state", "computed")),
                savings=float(data.get("savings", 0.0)),
                detail=str(data.get("detail", "")),
                created_at=float(data.get("created_at", 0.0)),
                updated_at=float(data.get("updated_at", 0.0)),
                budgeted=bool(data.get("budgeted", True)),
            )
        except (ValueError, KeyError, TypeError) as error:
            raise InvalidValue(f"disruption command record: {error}") from None
        if record.state not in STATES:
            raise InvalidValue(f"disruption command {record.id}: state {record.state!r} is not one of {STATES}")
        return record
