"""Runs experiments: plans, executors, agent supervision, progress."""
