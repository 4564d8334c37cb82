"""Benchmark: the whole analysis pipeline on study-sized data (not a test).

3 configurations × 2 devices × 5 runs × 600 s at 1 Hz, plus 3 × 5 × 6000 latencies, 2000
bootstrap replicates. Prints the total and the bootstrap part (block-bootstrap means of
every configuration plus the i.i.d. energy bootstrap), best of ``--repeat`` runs.

    .venv/bin/python benchmarks/bench_analysis.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "data" / "analysis"))

from generate import make_frames

from iotsecbench.analysis import bootstrap as bootstrap_module
from iotsecbench.analysis import pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    current, latency = make_frames(seed=0, runs=5, seconds=600, rate_hz=1, messages=6000)
    spent = {"bootstrap": 0.0}

    def timed(function):
        def wrapper(*a, **k):
            start = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                spent["bootstrap"] += time.perf_counter() - start

        return wrapper

    bootstrap_module.block_bootstrap_means = timed(bootstrap_module.block_bootstrap_means)
    pipeline.iid_bootstrap_difference = timed(bootstrap_module.iid_bootstrap_difference)
    results = []
    for _ in range(args.repeat):
        spent["bootstrap"] = 0.0
        start = time.perf_counter()
        pipeline.analyze(current, latency, options=pipeline.AnalysisOptions(reps=2000))
        results.append((time.perf_counter() - start, spent["bootstrap"]))
    total, boot = min(results)
    print(f"rows: current {len(current)}, latency {len(latency)}; reps 2000")
    print(f"total   best {total:.2f} s  (all: {', '.join(f'{t:.2f}' for t, _ in results)})")
    print(f"bootstrap    {boot:.2f} s")


if __name__ == "__main__":
    main()
