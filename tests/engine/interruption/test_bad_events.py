"""Bad events, fuzzed: the corpus of tests/events mutated one field at a time, through `parse`.

Hypothesis picks one event of the corpus (as EventBridge sends it, or wrapped by SNS), one field
in it, and replaces it with a wrong type, a huge number, an odd string, deep nesting or a very
long string, or deletes it. `parse` must answer within a second with a Message that acts only on
instances the event names, or raise MalformedEvent naming the field it could not read, and
nothing else. (test_parse.py fuzzes arbitrary JSON and event-like dicts; this starts from the
real shapes, so the mutations land where the readers look.)
"""

from __future__ import annotations

import copy
import json
import math
import re
import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.engine.interruption import KINDS, MalformedEvent, action_for, parse
from tests.events import EVENTS

FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CORPUS = {p.stem: json.loads(p.read_text()) for p in sorted(EVENTS.glob("*.json")) if p.stem != "sqs_envelope"}
_INSTANCE = re.compile(r"i-[0-9A-Za-z-]+")
NOW = 1_795_255_205.0

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([-1, 0, 2**63, 10**300, 1e308, -1e308]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        ["", "i-", "i-0a1b2c3d4e5f60718", "arn:aws:ec2:us-east-1:1:instance/i-1", "closed", "CLOSED", "RESOLVED",
         "PUBLIC", "Sat, 31 Feb 2026 14:00 GMT", "2026-11-21T10:00:00Z", "9999-12-31T23:59:59Z", "x" * 100_000,
         "\u202e", "\x00", "💥" * 30, "Notification"]
    ),
)  # fmt: skip


def _nested(depth: int, leaf: Any) -> Any:
    for level in range(depth):
        leaf = [leaf] if level % 2 else {"a": leaf}
    return leaf


values = st.one_of(
    scalars,
    st.lists(scalars, max_size=4),
    st.dictionaries(st.text(max_size=12), scalars, max_size=4),
    st.builds(_nested, st.integers(min_value=2, max_value=400), scalars),  # deeper: test_parse's text cases
)


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [here]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*here, key))
    elif isinstance(value, list):
        for position, child in enumerate(value):
            found += _paths(child, (*here, position))
    return found


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, tuple[Any, ...]]:
    """(the event text as the queue delivers it, the path changed)."""
    name = draw(st.sampled_from(sorted(CORPUS)))
    event = copy.deepcopy(CORPUS[name])
    sns = isinstance(event, dict) and event.get("Type") == "Notification"
    target = json.loads(event["Message"]) if sns else event
    path = draw(st.sampled_from(_paths(target)))
    if not path:
        target = draw(values)
    else:
        parent = target
        for segment in path[:-1]:
            parent = parent[segment]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(values)
    if sns:
        event["Message"] = json.dumps(target, allow_nan=True)
    elif draw(st.booleans()) and isinstance(target, dict) and "Type" not in target:
        event = {"Type": "Notification", "MessageId": "m-1", "Message": json.dumps(target), "Timestamp": "x"}
    else:
        event = target
    return json.dumps(event, allow_nan=True), path


@FUZZ
@given(case=mutated())
def test_a_mutated_event_parses_or_is_malformed_naming_the_field(case: tuple[str, tuple[Any, ...]]) -> None:
    text, path = case
    started = time.perf_counter()
    try:
        message = parse(text)
    except MalformedEvent as error:
        assert time.perf_counter() - started < 1.0
        words = str(error)
        assert len(words) < 400
        named = [str(s) for s in path if isinstance(s, str)]
        assert not named or any(n in words for n in named) or words.startswith(("body", "SNS")), (path, words)
        return
    assert time.perf_counter() - started < 1.0
    assert message.kind in KINDS
    assert set(message.instance_ids) <= set(_INSTANCE.findall(text)), "acts only on instances the event names"
    action = action_for(message, "ReplaceThenDrain", now=NOW, grace=600.0)
    assert action.deadline is None or math.isfinite(action.deadline)
    assert math.isfinite(message.time)
