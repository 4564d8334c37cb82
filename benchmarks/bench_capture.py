"""What `run --capture` costs a saturating run: messages per second with and without it, and
the capture's size per 1,000 messages.

Each pair is two experiments of the same configurations at ``--rate max`` (QoS 0, 256 B) on
the native agent (``--stack mbedtls``: the Python agents publish MQTT at a fixed rate only):
one without --capture, one with, in alternating order (the vCPUs drift: only same-pair
ratios mean something). The rate is the store's ``achieved_rate_hz`` of the emitter; the size
is the pcapng's bytes per 1,000 published messages (both connections of the run: the
emitter's to the broker and the broker's to the receiver, on loopback).

    .venv/bin/python benchmarks/bench_capture.py [--pairs 3] [--seconds 5] [--stack mbedtls]
    .venv/bin/python benchmarks/bench_capture.py --stack openssl --rate 1000   # fixed rate
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

CONFIGURATIONS = "plain,tls1.2,ecdh-p256-aes128-gcm"


def experiment(
    out: Path, seconds: float, stack: str, capture: bool, rate: str = "max"
) -> dict[str, tuple]:
    """configuration → (achieved rate in Hz, messages sent, capture bytes or None, dropped)."""
    argv = [
        sys.executable, "-m", "iotsecbench", "run", "--configs", CONFIGURATIONS,
        "--rate", rate, "--duration", str(seconds), "--reps", "1", "--stack", stack,
        "--out", str(out), "--quiet", "--no-report",
    ]  # fmt: skip
    subprocess.run([*argv, *(["--capture"] if capture else [])], check=True, capture_output=True)
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        rows = db.execute(
            "select configuration, achieved_rate_hz, messages_sent, details_json from runs"
        ).fetchall()
    results = {}
    for configuration, rate, sent, details in rows:
        entry = json.loads(details).get("capture")
        size = (out / entry["file"]).stat().st_size if entry else None
        results[configuration] = (rate, sent, size, entry["dropped_packets"] if entry else None)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--stack", default="mbedtls")
    parser.add_argument("--rate", default="max", help="max (saturating) or a fixed rate in Hz")
    args = parser.parse_args()
    ratios: dict[str, list[float]] = {}
    rates: dict[str, list[tuple[float, float]]] = {}
    sizes: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as work:
        for pair in range(args.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            measured = {
                capture: experiment(
                    Path(work) / f"{pair}-{capture}", args.seconds, args.stack, capture, args.rate
                )
                for capture in order
            }
            for configuration, (rate, _, _, _) in measured[False].items():
                captured_rate, sent, size, dropped = measured[True][configuration]
                ratios.setdefault(configuration, []).append(captured_rate / rate)
                rates.setdefault(configuration, []).append((rate, captured_rate))
                sizes.setdefault(configuration, []).append(1000 * size / sent)
                print(
                    f"pair {pair} {configuration}: {rate:,.0f} → {captured_rate:,.0f} msg/s "
                    f"({captured_rate / rate:.3f}), capture {size / 1e6:.1f} MB for {sent:,} "
                    f"messages, {dropped} dropped",
                    flush=True,
                )
    print(
        f"\nstack {args.stack}, rate {args.rate}, {args.seconds:g} s per run, {args.pairs} pairs "
        "(medians)"
    )
    print("| configuration | without (msg/s) | with --capture (msg/s) | with / without ", end="")
    print("| KiB per 1,000 messages |")
    print("|---|---|---|---|---|")
    for configuration, values in ratios.items():
        without = statistics.median(r for r, _ in rates[configuration])
        with_capture = statistics.median(c for _, c in rates[configuration])
        print(
            f"| {configuration} | {without:,.0f} | {with_capture:,.0f} | "
            f"{statistics.median(values):.3f} (range {min(values):.3f}–{max(values):.3f}) | "
            f"{statistics.median(sizes[configuration]) / 1024:,.0f} |"
        )


if __name__ == "__main__":
    main()
