"""Emitter and receiver programs, each run as its own process by the runner."""
