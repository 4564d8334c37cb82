"""Fleets of virtual devices (``run --target T --devices N``, docs/device-client.md "Fleets of
virtual devices"): how many QEMU devices this machine keeps at real time, the figure behind
``Target.fleet_per_core``. Each N is one 10 s run of TLS 1.2, 1 KiB, 10 Hz, QoS 1; it kept
real time when every device achieved ≥ 99 % of the asked rate (the run is ok), else the run
names the device and its rate. The fleet limit is lifted for the probe (the point is to find
it); the machine's load average is printed beside each, since others' work takes the cores.

    .venv/bin/python benchmarks/bench_device_fleet.py --target rv32imc --devices 8,12,16

Figures go to the note, docs/device-client.md and vmcu/targets.py's comment, never into test
assertions.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import duckdb


def probe(target: str, devices: int, out: Path) -> tuple[str, float, str]:
    """(status, achieved rate of the run, error) of one fleet run, limit lifted (in the child
    process that runs it)."""
    code = (
        "import dataclasses, sys\n"
        "from iotsecbench.vmcu import targets\n"
        f"targets.TARGETS[{target!r}] = dataclasses.replace("
        f"targets.TARGETS[{target!r}], fleet_per_core=10_000)\n"
        "from iotsecbench.cli.app import main\n"
        "sys.argv = ['iotsecbench', *sys.argv[1:]]\n"
        "main()\n"
    )
    args = ["run", "--target", target, "--devices", str(devices), "--configs", "tls1.2",
            "--payload", "1024", "--rate", "10", "--qos", "1", "--duration", "10", "--reps", "1",
            "--no-report", "--quiet", "--out", str(out)]  # fmt: skip
    os.spawnv(os.P_WAIT, sys.executable, [sys.executable, "-c", code, *args])
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        status, rate, error = db.execute(
            "select status, achieved_rate_hz, coalesce(error, '') from runs"
        ).fetchone()
    return status, rate, error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="rv32imc")
    parser.add_argument("--devices", default="2,4,8,12,16")
    parser.add_argument("--out", type=Path, default=None)
    options = parser.parse_args()
    root = options.out or Path(tempfile.mkdtemp(prefix="bench-device-fleet-"))
    for devices in (int(n) for n in options.devices.split(",")):
        load = os.getloadavg()[0]
        status, rate, error = probe(options.target, devices, root / f"{options.target}-{devices}")
        print(f"{options.target} devices {devices:3d}: {status:6s} run rate {rate:.3f} Hz, "
              f"load {load:.1f} {error}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
