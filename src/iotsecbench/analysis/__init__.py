"""Statistics: pure functions over arrays and frames; no files, processes or global RNG."""
