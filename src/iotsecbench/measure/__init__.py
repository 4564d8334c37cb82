"""Probes: monotonic clock, CPU time, TCP_INFO counters, memory, the 10 Hz sampler.

Modules: ``clock`` (the one shared clock), ``cpu`` (process/thread CPU time, block timer),
``memory`` (RSS, peak RSS), ``tcpinfo`` (Linux ``struct tcp_info``), ``sampler`` (10 Hz thread).
This package imports nothing from the project except ``iotsecbench.errors``.
"""
