"""Errors raised by pure parsing: each names the offending value and, when known, where it was."""

from __future__ import annotations


class InvalidValue(ValueError):
    """A value that cannot be understood; the message names the value and the rule it broke."""
