"""Nodewright's domain model: frozen dataclasses and pure functions over them.

Nothing in this package performs I/O, reads the environment or the clock, or imports an SDK
(checked by import-linter). Times are float seconds since the epoch, passed in by callers.
"""
