"""Resolution of the emulated delay: one-way time of UDP datagrams through the wire minus
the configured delay (docs/network.md). Needs root.

    .venv/bin/python benchmarks/bench_network.py --delays 0,1,50,400 --count 300
"""

from __future__ import annotations

import argparse
import signal
import socket
import statistics
import tempfile
import time
from pathlib import Path

from iotsecbench.lab.network import NetworkLab, in_namespace
from iotsecbench.spec.network import NetworkProfile


def excess_ms(delay_ms: float, count: int, gap_s: float, directory: Path) -> list[float]:
    profile = NetworkProfile.model_validate({"emitter": {"up": {"delay_ms": delay_ms}}})
    with NetworkLab(profile, f"bench-{delay_ms:g}", directory / f"{delay_ms:g}") as lab:

        def bound() -> socket.socket:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind((lab.address("broker"), 5000))
            return sock

        server = in_namespace(lab.namespaces["broker"], bound)
        client = in_namespace(
            lab.namespaces["emitter"], lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        )
        target = (lab.address("broker"), 5000)
        client.sendto(b"warm", target)  # ARP
        server.recv(64)
        excess = []
        for _ in range(count):
            client.sendto(time.monotonic_ns().to_bytes(8, "little"), target)
            sent = int.from_bytes(server.recv(64), "little")
            excess.append((time.monotonic_ns() - sent) / 1e6 - delay_ms)
            time.sleep(gap_s)
    return sorted(excess)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    # SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C, so the namespaces are removed.
    signal.signal(signal.SIGTERM, _interrupt)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delays", default="0,1,50,400", help="delays in ms, comma-separated")
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--gap", type=float, default=0.003, help="seconds between datagrams")
    arguments = parser.parse_args()
    print("| configured delay | median excess | 5th – 95th percentile | max |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for delay in (float(d) for d in arguments.delays.split(",")):
            values = excess_ms(delay, arguments.count, arguments.gap, Path(directory))
            low, high = values[len(values) // 20], values[len(values) * 19 // 20]
            print(
                f"| {delay:g} ms | {statistics.median(values):.2f} ms | "
                f"{low:.2f} – {high:.2f} ms | {values[-1]:.1f} ms |"
            )


if __name__ == "__main__":
    main()
