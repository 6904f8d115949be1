"""Errors raised by pure parsing: each names the offending value and, when known, where it was."""

from __future__ import annotations


class InvalidValue(ValueError):
    """A value that cannot be understood; the message names the value and the rule it broke."""


def shown(value: object, limit: int = 60) -> str:
    """`repr(value)` for a message, cut to `limit` characters: a message names a value, never
    echoes 100 kB of it.
    """
    try:
        text = repr(value)
    except ValueError:  # an int too long to write in decimal
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 4] + "...'"
