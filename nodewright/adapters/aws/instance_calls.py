"""Calls on existing instances by id that tolerate ids EC2 no longer knows: TerminateInstances and
StopInstances (`Ec2CloudProvider.terminate`, `.stop`).

EC2 refuses a whole call when one of its ids is unknown (InvalidInstanceID.NotFound, naming the
ids in its message); an instance gone is what both callers want anyway, so the named ids are left
out and the call sent again with the rest. When the message names none of the ids sent, each id
gets its own call (a lone unknown id is done).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

from nodewright.adapters.aws.retry import Backoff, error_code

_ID_PATTERN = r"i-[0-9a-f]+"


def each_known(backoff: Backoff, call: Callable[..., Any], ids: list[str]) -> None:
    """`call(InstanceIds=ids)` through `backoff`, leaving out the ids EC2 says it does not know."""
    remaining = list(ids)
    while remaining:
        try:
            backoff.call(partial(call, InstanceIds=remaining))
            return
        except Exception as error:
            if error_code(error) != "InvalidInstanceID.NotFound":
                raise
            gone = set(re.findall(_ID_PATTERN, str(error))) & set(remaining)
            if not gone:
                # The message named no id we sent: fall back to one call per id.
                if len(remaining) == 1:
                    return
                for instance_id in remaining:
                    each_known(backoff, call, [instance_id])
                return
            remaining = [i for i in remaining if i not in gone]
