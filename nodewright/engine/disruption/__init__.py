"""Disruption: which nodes to remove or replace, as commands. Pure."""
