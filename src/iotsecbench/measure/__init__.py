"""Probes: monotonic clock, CPU time, TCP_INFO counters, memory, the 10 Hz sampler."""
