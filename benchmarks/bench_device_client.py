"""The device client (docs/device-client.md): how fast QEMU runs it, how long the iotst study
takes counted on the device, and which groups the device finds dearer than the host.

    .venv/bin/python benchmarks/bench_device_client.py [--reps 20] [--no-traced] [--out DIR]

1. Instructions emulated per second, per target and stack: one TLS 1.3 connection's counted
   instructions (client, network wait and UART I/O) over QEMU's whole run (start-up included).
2. The wall time of ``iotsecbench bench handshake --preset iotst --target rv32imc --reps N``
   (the command line as a user runs it, broker per repetition, QEMU per connection).
3. Per iotst group, the device's counted instructions (network-invariant) beside the host's
   traced CPU time of ``bench handshake --preset iotst --trace --reps N`` (root and tracefs;
   ``--no-traced`` skips it): each group's share of its method's total, and their ratio —
   above 1, the device spends a larger share of its handshake there than the host does.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iotsecbench.bench.device import run_counted_benchmark
from iotsecbench.vmcu.client import device_profiles

PROFILE = "tls1.3/x25519/ecdsa-p256"


def emulation_speed(work: Path) -> list[tuple[str, str, float, float, float]]:
    """(target, stack, instructions per second, QEMU wall s, instructions) per combination."""
    rows = []
    for target in ("rv32imc", "cortex-m4"):
        for stack in ("mbedtls", "wolfssl"):
            bench = run_counted_benchmark(
                device_profiles([PROFILE]), work / f"{target}-{stack}",
                target_name=target, stack=stack, repetitions=3,
            )  # fmt: skip
            emulation = bench.results[0].summary()["emulation"]
            connections = [s.connection for s in bench.results[0].samples]
            rows.append((
                target, stack, emulation["instructions_per_s"]["mean"],
                emulation["qemu_wall_s"]["mean"],
                sum(c.emulated_instructions for c in connections) / len(connections),
            ))  # fmt: skip
    return rows


def timed_command(arguments: list[str]) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "iotsecbench", *arguments], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    return time.monotonic() - started


def shares(groups: dict[str, float]) -> dict[str, float]:
    total = sum(groups.values())
    return {name: value / total for name, value in groups.items()} if total else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--no-traced", action="store_true", help="skip the host's traced run")
    parser.add_argument("--out", type=Path, default=None, help="keep the results here")
    args = parser.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="bench-device-"))

    print("## Instructions emulated per second (one TLS 1.3 connection, 3 repetitions)\n")
    print("| target | stack | instructions / s | QEMU wall s | instructions per run |")
    print("|---|---|---|---|---|")
    for target, stack, rate, wall, instructions in emulation_speed(work / "speed"):
        millions = instructions / 1e6
        print(f"| {target} | {stack} | {rate / 1e6:,.0f} M | {wall:.2f} | {millions:,.1f} M |")

    counted_json = work / "counted.json"
    command = ["bench", "handshake", "--preset", "iotst", "--target", "rv32imc", "--reps",
               str(args.reps), "--out", str(work / "counted"), "--json", str(counted_json),
               "--quiet"]  # fmt: skip
    wall = timed_command(command)
    print(f"\n## `iotsecbench {' '.join(command[:8])}`: {wall:.1f} s wall\n")
    counted = json.loads(counted_json.read_text())

    traced = None
    if not args.no_traced:
        traced_json = work / "traced.json"
        command = ["bench", "handshake", "--preset", "iotst", "--reps", str(args.reps),
                   "--cores", "1", "--clock", "1", "--out", str(work / "traced"), "--json",
                   str(traced_json), "--quiet"]  # fmt: skip
        traced_wall = timed_command(command)
        print(f"(the traced preset, --reps {args.reps}, one placement: {traced_wall:.1f} s wall)\n")
        traced = {p["tls_profile_name"]: p for p in json.loads(traced_json.read_text())["profiles"]}

    print("## Per group: the device's counted instructions beside the host's traced CPU time\n")
    for profile in counted["profiles"]:
        name = profile["tls_profile_name"]
        device = {g: v["client"]["mean"] for g, v in profile["groups"].items()}
        host = (traced or {}).get(name, {}).get("groups", {})
        device_share, host_share = shares(device), shares(host)
        total = profile["instructions"]["network_invariant"]["mean"]
        print(f"### {name}: {total / 1e6:,.1f} M instructions counted on rv32imc (mbedTLS 3.6)\n")
        print("| group | device instructions | device share | host CPU µs | host share | ratio |")
        print("|---|---|---|---|---|---|")
        for group in device:
            h = host.get(group)
            ratio = device_share[group] / host_share[group] if host_share.get(group) else None
            print(
                f"| {group} | {device[group] / 1e6:,.2f} M | {device_share[group]:.1%} | "
                f"{'–' if h is None else f'{h * 1e6:,.0f}'} | "
                f"{'–' if h is None else f'{host_share[group]:.1%}'} | "
                f"{'–' if ratio is None else f'{ratio:.2f}'} |"
            )
        print()
    print(f"(results kept in {work})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
