"""The largest fleet this machine sustains at 1 msg/s per device with two agent processes per
device (``--fleet-agent processes``; benchmarks/bench_fleet_agent.py measures the fleet agent),
plain MQTT against TLS 1.2:
fleets of growing size, each size run for both configurations back to back (alternating which
goes first), on the embedded broker.

    .venv/bin/python benchmarks/bench_fleet.py [--sizes 25,50,100,150] [--duration 30]
                                               [--ramp 10] [--out DIR]

A size is *sustained* when the run ends ok, no message is lost and the fleet's p99 latency
stays below one message period (1 s): the machine keeps up with every device. Everything runs
on this machine (emitters, receivers, broker), so the fleet's latency includes the devices'
own contention for its cores (docs/scale.md). Per size and configuration it prints the
connect rate achieved, set-up p50/p99, latency p50/p99 and the broker's CPU, and per size the
TLS/plain ratio of the broker's CPU and of p99 latency (same machine, minutes apart).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

from iotsecbench.lab.limits import fleet_limit

COLUMNS = (
    "status, fleet_size, messages_sent, messages_lost, connect_rate_hz, setup_p50_ms, "
    "setup_p99_ms, latency_p50_ms, latency_p99_ms, broker_cpu_mean_percent, broker_rss_peak_bytes"
)


def run_fleet(configuration: str, devices: int, args: argparse.Namespace, out: Path) -> dict:
    directory = out / f"{configuration}-{devices}"
    command = [
        sys.executable, "-m", "iotsecbench", "run", "--configs", configuration,
        "--devices", str(devices), "--rate", "1", "--duration", str(args.duration),
        "--reps", "1", "--out", str(directory), "--quiet", "--no-report",
        "--fleet-agent", "processes",  # the per-device agents: bench_fleet_agent.py the other
        *(["--ramp", str(args.ramp)] if args.ramp else []),
    ]  # fmt: skip
    completed = subprocess.run(command, capture_output=True, text=True)
    if not (directory / "results.duckdb").exists():
        return {"status": f"refused: {completed.stderr.strip().splitlines()[-1:]}"}
    with duckdb.connect(str(directory / "results.duckdb"), read_only=True) as db:
        row = db.execute(f"select {COLUMNS} from runs").fetchone()
    return dict(zip([c.strip() for c in COLUMNS.split(",")], row, strict=True))


def sustained(result: dict) -> bool:
    return (
        result["status"] == "ok"
        and result["messages_lost"] == 0
        and (result["latency_p99_ms"] or 0) < 1000.0
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="25,50,100,150")
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument(
        "--ramp", type=float, default=10.0, help="devices per second (0: all at once)"
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    limit = fleet_limit()
    print(f"machine limit: {limit.devices} devices ({limit.reason})")
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    largest: dict[str, int] = {}
    header = (
        f"{'devices':>7} {'config':>7} {'status':>7} {'sent':>6} {'lost':>5} {'conn/s':>7} "
        f"{'setup p50':>9} {'p99':>7} {'lat p50':>8} {'p99':>8} {'broker %':>8} {'RSS MiB':>7}"
    )
    print(header)
    for position, devices in enumerate(int(size) for size in args.sizes.split(",")):
        order = ("plain", "tls1.2") if position % 2 == 0 else ("tls1.2", "plain")
        results = {
            configuration: run_fleet(configuration, devices, args, out) for configuration in order
        }
        for configuration in ("plain", "tls1.2"):
            r = results[configuration]
            if r["status"] not in ("ok", "failed"):
                print(f"{devices:>7} {configuration:>7} {r['status']}")
                continue
            print(
                f"{devices:>7} {configuration:>7} {r['status']:>7} {r['messages_sent']:>6} "
                f"{r['messages_lost']:>5} {r['connect_rate_hz'] or 0:>7.1f} "
                f"{r['setup_p50_ms'] or 0:>9.1f} {r['setup_p99_ms'] or 0:>7.1f} "
                f"{r['latency_p50_ms'] or 0:>8.2f} {r['latency_p99_ms'] or 0:>8.1f} "
                f"{r['broker_cpu_mean_percent'] or 0:>8.1f} "
                f"{(r['broker_rss_peak_bytes'] or 0) / 2**20:>7.1f}"
            )
            if sustained(r):
                largest[configuration] = devices
        plain, tls = results["plain"], results["tls1.2"]
        if plain.get("broker_cpu_mean_percent") and tls.get("broker_cpu_mean_percent"):
            cpu = tls["broker_cpu_mean_percent"] / plain["broker_cpu_mean_percent"]
            latency = (tls["latency_p99_ms"] or 0) / max(plain["latency_p99_ms"] or 0, 1e-9)
            print(f"{'':>7} TLS/plain: broker CPU ×{cpu:.2f}, p99 latency ×{latency:.2f}")
    for configuration in ("plain", "tls1.2"):
        print(f"largest sustained fleet, {configuration}: {largest.get(configuration, 0)} devices")
    print(f"results: {out}")


if __name__ == "__main__":
    main()
