"""Pure decision code. Never imports SDKs, reads the environment or clock, or does I/O."""
