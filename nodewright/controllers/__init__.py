"""Controllers: the imperative shell. Read state, call the engine, carry out its decisions."""
