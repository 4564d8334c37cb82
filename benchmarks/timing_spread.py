"""The spread of the timing the unit tests assert on, measured on this machine (issue:
hardening — margins justified by measured spread): the 10 Hz sampler's gaps, and a 50 ms busy
loop's thread-CPU share, each with 0, 1 and 2 competing busy processes (the suite runs alone,
but a shared 2-vCPU machine rarely is).

    python benchmarks/timing_spread.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
from itertools import pairwise

from iotsecbench.measure import cpu
from iotsecbench.measure.sampler import Sample, Sampler


def burn(stop: multiprocessing.synchronize.Event) -> None:
    while not stop.is_set():
        pass


def sampler_gaps_ms() -> list[float]:
    samples: list[Sample] = []
    with Sampler(lambda: None, samples.append):
        time.sleep(1.5)
    times = [sample.t_ns for sample in samples][:-1]  # the last is the off-schedule stop sample
    return [(b - a) / 1e6 for a, b in pairwise(times)]


def spin_share() -> float:
    def spin(duration_s: float) -> None:
        end = time.perf_counter() + duration_s
        while time.perf_counter() < end:
            pass

    _, timing = cpu.time_call(spin, 0.05)
    return timing.cpu_ns / timing.wall_ns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    rounds = parser.parse_args().rounds
    print(
        f"{'competing':>9} {'gap min':>8} {'gap max':>8} {'gap p50':>8} {'spin CPU share min':>19}"
    )
    for competing in (0, 1, 2):
        stop = multiprocessing.Event()
        burners = [multiprocessing.Process(target=burn, args=(stop,)) for _ in range(competing)]
        for process in burners:
            process.start()
        try:
            gaps = [gap for _ in range(rounds) for gap in sampler_gaps_ms()]
            shares = [spin_share() for _ in range(rounds * 5)]
        finally:
            stop.set()
            for process in burners:
                process.join()
        print(
            f"{competing:>9} {min(gaps):>8.1f} {max(gaps):>8.1f} {statistics.median(gaps):>8.1f} "
            f"{min(shares):>19.2f}"
        )


if __name__ == "__main__":
    main()
