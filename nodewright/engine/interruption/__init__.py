"""Interruption: parse EC2/Health events and decide actions. Pure."""
