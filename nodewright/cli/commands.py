"""Imports every command module so each registers itself on the shared Typer app."""

from __future__ import annotations

from importlib import import_module

# Each module registers its commands on `nodewright.cli.app` when imported.
for _module in (
    "nodewright.cli.catalog",
    "nodewright.cli.explain",
    "nodewright.cli.nodepool",
    "nodewright.cli.plan",
    "nodewright.cli.simulate",
    "nodewright.cli.uninstall",
):
    try:
        import_module(_module)
    except ModuleNotFoundError as error:  # pragma: no cover - while a command group is being built
        if error.name != _module:
            raise
