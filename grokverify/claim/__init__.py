"""Reading a claim: its schema, YAML with lines, grids, limits and messages (no torch)."""
