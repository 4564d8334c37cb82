"""The whole device run counted (``run --target``, docs/device-client.md "The whole run"):

* linearity: instructions per message of ecdh-p256-aes128-gcm (or ``--schemes``, e.g. the
  payload-schemes study's lightweight ones) at 64, 1024 and 4096 B — their spread after the
  first message, a straight line through the three sizes (R²) and the seal's per-byte slope
  against ``bench crypto --target``'s per-byte count of the same cipher, where it has it, on
  its own mbedTLS 2.28.10 and on the device client's 3.6.5 (``--device-library``);
* rate: achieved over asked at 10 Hz and 100 Hz with TLS 1.2 at 1 KiB, and the instructions
  QEMU emulated per second of the run;
* the wall time of the stability preset shortened (``--duration 20 --reps 1``);
* tcp: the same linearity for the raw-TCP role (``--transport tcp --rate max``, the
  block-sizes study: vmcu/client/frames.c) over the study's blocks, 51, 242, 1460 and 4096 B,
  for its two keyed configurations (``--tcp-schemes``), one way or echoed (``--methods``) — the
  instructions per payload byte at each size, R² of the per-block line, the seal's slope
  against ``bench crypto --target``'s, and how many counted instructions QEMU ran per second
  of the saturating run;
* blocksizes: the wall time of the block-sizes preset on the target shortened
  (``--duration 3 --reps 1``, to the report).

    .venv/bin/python benchmarks/bench_device_run.py [--targets rv32imc,cortex-m4] [--out DIR]
        [--parts linearity,rates,stability,tcp,blocksizes]
        [--schemes ecdh-p256-aes128-gcm,psk-ascon128v12]
        [--tcp-schemes dh-sha256-aes128-ctr-hmac,rsa-oaep-aes256-gcm] [--methods unidirectional]

Figures go to the note and docs/device-client.md, never into test assertions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np

from iotsecbench.agents.records import read_records
from iotsecbench.security import resolve_configuration
from iotsecbench.vmcu.primitives import TARGET_CIPHERS

SCHEME = "ecdh-p256-aes128-gcm"
SIZES = (64, 1024, 4096)
# The block-sizes study's (spec/presets/block-sizes.toml): its keyed configurations and blocks.
TCP_SCHEMES = "dh-sha256-aes128-ctr-hmac,rsa-oaep-aes256-gcm"
BLOCKS = (51, 242, 1460, 4096)


def cli(*args: str, may_fail: bool = False) -> float:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "iotsecbench", *args], capture_output=True, text=True, check=False
    )
    if result.returncode != 0 and not may_fail:
        print(result.stdout[-2000:], result.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"failed: iotsecbench {' '.join(args)}")
    return time.monotonic() - started


def emitter_records(out: Path) -> dict[str, list[dict]]:
    """Per configuration and payload: the emitter's records."""
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        rows = db.execute("select cell_label, run_dir from runs where status = 'ok'").fetchall()
    return {label: read_records(out / run_dir / "emitter.jsonl") for label, run_dir in rows}


def linearity(target: str, work: Path, scheme: str = SCHEME, method: str | None = None) -> dict:
    """Per size, the instructions per message after the first and their spread; the line
    through the sizes; the seal's slope against bench crypto --target's. ``method``: the
    raw-TCP role (saturating over the tcp transport, the study's blocks), else MQTT at 10 Hz."""
    if method is None:
        out, sizes = work / f"linear-{target}-{scheme}", SIZES
        pacing = ["--rate", "10", "--duration", "6", "--qos", "0"]
    else:
        out, sizes = work / f"tcp-{target}-{scheme}-{method}", BLOCKS
        pacing = ["--transport", "tcp", "--method", method, "--rate", "max", "--duration", "3"]
    cli("run", "--target", target, "--configs", scheme, "--payload", ",".join(map(str, sizes)),
        *pacing, "--reps", "1", "--out", str(out), "--quiet", "--no-report")  # fmt: skip
    counted = counted_details(out)
    per_size = {}
    for label, records in emitter_records(out).items():
        messages = [r for r in records if r["type"] == "message"]
        size = messages[0]["payload_bytes"]
        client = [m["instructions_crypto"] + m["instructions_protocol"] for m in messages[1:]]
        seal = [m["instructions_seal"] for m in messages[1:]]
        per_size[size] = {
            "label": label,
            "messages": len(messages),
            "client_mean": statistics.mean(client),
            "client_per_byte": statistics.mean(client) / size,
            "client_spread": (max(client) - min(client)) / statistics.mean(client),
            "first_over_rest": (
                messages[0]["instructions_crypto"] + messages[0]["instructions_protocol"]
            )
            / statistics.mean(client),
            "seal_mean": statistics.mean(seal),
            "seal_spread": (max(seal) - min(seal)) / statistics.mean(seal),
            "emulated_instructions_per_s": counted[label].get("emulated_instructions_per_s"),
            "throughput_kib_s": counted[label].get("throughput_kib_s"),
        }
    sizes = np.array(sorted(per_size), dtype=float)
    figures = {}
    for key in ("client_mean", "seal_mean"):
        values = np.array([per_size[int(s)][key] for s in sizes])
        slope, intercept = np.polyfit(sizes, values, 1)
        fitted = slope * sizes + intercept
        r2 = 1 - np.sum((values - fitted) ** 2) / np.sum((values - values.mean()) ** 2)
        figures[key] = {"slope_per_byte": slope, "intercept": intercept, "r2": r2}
    security = resolve_configuration(scheme).scheme
    cipher = security.name.removeprefix(f"{security.key_establishment}-")
    if cipher not in TARGET_CIPHERS:  # bench crypto --target has no build of it
        return {"per_size": per_size, "fits": figures, "bench_crypto": None}
    # the seal's slope against bench crypto --target's: its own mbedTLS 2.28.10, and the
    # device client's 3.6.5 (--device-library, the library the run seals with)
    references = {}
    for name, library in (
        ("bench_crypto", []),
        ("bench_crypto_device_library", ["--device-library"]),
    ):
        crypto_json = work / f"crypto-{target}-{cipher}-{len(sizes)}-{name}.json"
        cli("bench", "crypto", "--schemes", cipher, "--sizes",
            ",".join(str(int(z)) for z in sizes), "--repetitions", "3", "--target", target,
            *library, "--json", str(crypto_json))  # fmt: skip
        references[name] = crypto_per_byte(crypto_json)
        references[name]["run_over_reference"] = (
            figures["seal_mean"]["slope_per_byte"] / references[name]["slope_per_byte"]
        )
    return {"per_size": per_size, "fits": figures, **references}


def counted_details(out: Path) -> dict[str, dict]:
    """Per run (cell label): the counted figures collect stored (details_json.counted) and
    the run's throughput (the emulator's, for a saturating device run)."""
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        rows = db.execute(
            "select cell_label, details_json, throughput_kib_s from runs where status = 'ok'"
        ).fetchall()
    return {
        label: {**(json.loads(details or "{}").get("counted") or {}), "throughput_kib_s": kib}
        for label, details, kib in rows
    }


def crypto_per_byte(path: Path) -> dict:
    """bench crypto --target's counted seal of the cipher at the same sizes: its per-byte
    slope (a straight line through the sizes, as for the run) and the library it counted."""
    results = json.loads(path.read_text())["target_results"]
    sizes = np.array([r["payload_bytes"] for r in results], dtype=float)
    seal = np.array([r["seal_instructions"] for r in results], dtype=float)
    slope, intercept = np.polyfit(sizes, seal, 1)
    return {"slope_per_byte": slope, "intercept": intercept, "library": results[0]["provenance"]}


def rates(target: str, work: Path) -> dict:
    figures = {}
    for rate in (10, 100):
        out = work / f"rate-{target}-{rate}"
        wall = cli("run", "--target", target, "--configs", "tls1.2", "--payload", "1024",
                   "--rate", str(rate), "--duration", "10", "--qos", "0", "--reps", "1",
                   "--out", str(out), "--quiet", "--no-report", may_fail=True)  # fmt: skip
        with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
            ((achieved, error, run_dir),) = db.execute(
                "select achieved_rate_hz, error, run_dir from runs"
            ).fetchall()
        records = read_records(out / run_dir / "emitter.jsonl")
        samples = [r for r in records if r["type"] == "sample"]
        last = samples[-1]
        emulated = sum(last[f"instructions_{b}"] for b in ("crypto", "protocol", "wait", "io"))
        run = next(r for r in records if r["type"] == "event" and r["kind"] == "device_run")
        qemu_s = run["detail"]["qemu_wall_ns"] / 1e9
        figures[rate] = {
            "achieved_over_asked": achieved / rate,
            "error": error,
            "emulated_instructions": emulated,
            "qemu_wall_s": qemu_s,
            "sleep_s": last["sleep_ns"] / 1e9,
            "instructions_per_awake_s": emulated / max(qemu_s - last["sleep_ns"] / 1e9, 1e-9),
            "clock_uncertainty_us": run["detail"]["clock_uncertainty_ns"] / 1e3,
            "cli_wall_s": wall,
        }
    return figures


def preset_wall_s(work: Path, preset: str, target: str, duration_s: int) -> float:
    """The wall time of a preset on the target, shortened to one repetition of duration_s,
    to the report."""
    return cli(
        "run", "--preset", preset, "--target", target, "--duration", str(duration_s),
        "--reps", "1", "--out", str(work / f"{preset}-{target}"), "--quiet",
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", default="rv32imc,cortex-m4")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--parts", default="linearity,rates,stability")
    parser.add_argument("--schemes", default=SCHEME, help="the linearity part's schemes")
    parser.add_argument("--tcp-schemes", default=TCP_SCHEMES, help="the tcp part's schemes")
    parser.add_argument("--methods", default="unidirectional", help="the tcp part's methods")
    args = parser.parse_args()
    parts = args.parts.split(",")
    work = args.out or Path(tempfile.mkdtemp(prefix="bench-device-run-"))
    results: dict = {}
    for target in args.targets.split(","):
        results[target] = {}
        if "linearity" in parts:
            results[target]["linearity"] = {
                scheme: linearity(target, work, scheme) for scheme in args.schemes.split(",")
            }
        if "rates" in parts:
            results[target]["rates"] = rates(target, work)
        if "stability" in parts:
            results[target]["stability_wall_s"] = preset_wall_s(work, "stability", target, 20)
        if "tcp" in parts:
            results[target]["tcp"] = {
                f"{scheme} {method}": linearity(target, work, scheme, method)
                for scheme in args.tcp_schemes.split(",")
                for method in args.methods.split(",")
            }
        if "blocksizes" in parts:
            results[target]["block_sizes_wall_s"] = preset_wall_s(work, "block-sizes", target, 3)
            results[target]["block_sizes_runs"] = counted_details(work / f"block-sizes-{target}")
        print(json.dumps({target: results[target]}, indent=2, default=float), flush=True)
    (work / "bench_device_run.json").write_text(json.dumps(results, indent=2, default=float))
    print(f"results: {work / 'bench_device_run.json'}")


if __name__ == "__main__":
    main()
