"""Benchmark (not a test): the iotst tracer's overhead and the repetitions ±1 % needs.

Runs `bench handshake --trace` on the study's four TLS 1.3 configurations (loopback, no
placement) with `--target-ci 1%` up to `--max-reps` repetitions, and prints per configuration:
the tracing overhead as a share of the connection's CPU time (each traced repetition has an
untraced partner in the same run, in random order: the machine's drift hits both), the
markers' own cost, and the repetitions after which the network-invariant interval was within
±1 % (or the width reached). Needs root and tracefs.

    .venv/bin/python benchmarks/bench_iotst.py [--max-reps 200]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

PROFILES = (
    "tls1.3/x25519/rsa3072,tls1.3/x25519/ecdsa-p256,tls1.3/P-256/rsa3072,tls1.3/P-256/ecdsa-p256"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-reps", type=int, default=200)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "results"
        document = Path(work) / "iotst.json"
        subprocess.run(
            [sys.executable, "-m", "iotsecbench", "bench", "handshake", "--trace", "--quiet",
             "--profiles", PROFILES, "--target-ci", "1%", "--max-reps", str(arguments.max_reps),
             "--out", str(out), "--json", str(document)],
            check=True,
        )  # fmt: skip
        profiles = json.loads(document.read_text())["profiles"]
    print(f"{'configuration':28} {'reps':>5} {'±CI':>7} {'overhead':>9} {'marker':>8}")
    for entry in profiles:
        invariant = entry["network_invariant_cpu_s"]
        half = (invariant["ci_high"] - invariant["ci_low"]) / 2 / invariant["mean"]
        print(
            f"{entry['profile']:28} {invariant['n']:>5} {half * 100:>6.2f}% "
            f"{entry['tracing_overhead_share'] * 100:>8.1f}% {entry['marker_cost_s'] * 1e6:>6.2f}us"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
