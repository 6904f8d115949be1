"""In-memory cluster and virtual clock, shared by tests and `nodewright simulate`."""
