"""Scheduling: where pending pods go, and which node claims to open for them. Pure."""
