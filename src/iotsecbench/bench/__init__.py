"""Focused microbenchmarks of iotsecbench's own parts: ``crypto`` (payload schemes)."""
