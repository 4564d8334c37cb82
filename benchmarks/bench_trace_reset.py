"""Benchmark (not a test): what resetting the trace buffers costs the work that follows — the
bulk of the iotst tracer's overhead (benchmarks/README.md, bench_iotst.py).

The same small workload (20 send/recv pairs on a socketpair and SHA-256 of 200 kB, ~0.2 ms of
CPU) runs after one of four preparations, chosen at random each time so that the machine's
drift hits all alike: nothing; a buffer reset (truncating the instance's ``trace``, as
``SchedTracer.start`` does); a reset then 3 ms of spinning (does warming up undo it?); a 3 ms
sleep (an idle gap alone). Prints the workload's median thread-CPU time per preparation.
Needs root and tracefs.

    .venv/bin/python benchmarks/bench_trace_reset.py [--rounds 1000] [--cpu N]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import socket
import statistics
import time

from iotsecbench.measure.tracefs import SchedTracer

PREPARATIONS = ("nothing", "reset", "reset + 3 ms spin", "3 ms sleep")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--cpu", type=int, help="pin to this CPU")
    options = parser.parse_args()
    if options.cpu is not None:
        os.sched_setaffinity(0, {options.cpu})
    data = os.urandom(200_000)
    left, right = socket.socketpair()

    def workload() -> int:
        start = time.thread_time_ns()
        for _ in range(20):
            left.send(b"x" * 100)
            right.recv(100)
        hashlib.sha256(data).digest()
        return time.thread_time_ns() - start

    def spin(seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass

    costs: dict[str, list[int]] = {name: [] for name in PREPARATIONS}
    with SchedTracer() as tracer:
        for _ in range(options.rounds):
            preparation = random.choice(PREPARATIONS)
            if preparation.startswith("reset"):
                with open(tracer.path / "trace", "w"):
                    pass
            if preparation == "reset + 3 ms spin":
                spin(0.003)
            if preparation == "3 ms sleep":
                time.sleep(0.003)
            tracer._write("tracing_on", "1")
            costs[preparation].append(workload())
            tracer.stop()
            tracer.events()
    reference = statistics.median(costs["nothing"])
    for name, values in costs.items():
        median = statistics.median(values)
        ratio = median / reference
        print(f"{name:20} {len(values):5} runs  median {median / 1e3:7.1f} µs  ×{ratio:.2f}")


if __name__ == "__main__":
    main()
