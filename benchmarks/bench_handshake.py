"""Handshakes per second: ``bench handshake`` on each client stack against ``openssl s_time -new``,
paired in the same run.

Both sides use X25519 and the same ECDSA P-256 certificate chain (lab/pki.py), per TLS version
(mbedTLS 2.28 speaks 1.2 only):

* iotsecbench: ``run_handshake_benchmark`` with ``tlsV/x25519/ecdsa-p256`` on ``--stack`` against
  the embedded mosquitto — each handshake is a full MQTT connection (TCP, TLS, CONNECT →
  CONNACK, DISCONNECT) with the TLS handshake measured and its negotiated parameters checked,
  made by paho on Python's ssl (``openssl``) or by the native agent (``mbedtls``, ``wolfssl``);
  the rate is measured connections over the span from the first TCP connect to the last
  CONNACK;
* OpenSSL: ``openssl s_time -new`` (C, new session each time, no application data) against
  ``openssl s_server -groups X25519`` with the same certificate and chain and version, run
  right after each iotsecbench measurement so each pair shares the machine's state.

The ratio says how many of OpenSSL's bare handshakes fit in one iotsecbench connection; the
per-connection overhead is the difference of the two mean times per handshake.

    .venv/bin/python benchmarks/bench_handshake.py --reps 300 --seconds 10 \
        --stacks openssl,mbedtls,wolfssl
"""

from __future__ import annotations

import argparse
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from iotsecbench.bench.handshake import run_handshake_benchmark
from iotsecbench.lab.broker import free_port
from iotsecbench.lab.pki import create_certificates
from iotsecbench.security.tls import parse_profile

VERSIONS = {"openssl": ("1.2", "1.3"), "mbedtls": ("1.2",), "wolfssl": ("1.2", "1.3")}


def iotsecbench_rate(work: Path, repetitions: int, stack: str, version: str) -> dict[str, float]:
    profile = parse_profile(f"tls{version}/x25519/ecdsa-p256")
    bench = run_handshake_benchmark([profile], work, repetitions=repetitions, warmup=5, stack=stack)
    samples = bench.results[0].samples
    span_ns = samples[-1].t_connack_ns - samples[0].t_start_ns
    return {
        "handshakes": len(samples),
        "per_second": len(samples) / (span_ns / 1e9),
        "tls_wall_ms": bench.results[0].statistic("tls_wall_ns").mean / 1e6,
        "tls_cpu_ms": bench.results[0].statistic("tls_cpu_ns").mean / 1e6,
        "connect_ms": bench.results[0].statistic("connect_wall_ns").mean / 1e6,
    }


def openssl_rate(work: Path, seconds: int, version: str) -> dict[str, float]:
    flag = "-tls1_3" if version == "1.3" else "-tls1_2"
    certs = create_certificates(work / "pki", "ecdsa-p256")
    leaf, *rest = certs.server_cert.read_text().split("-----END CERTIFICATE-----\n")
    (work / "leaf.pem").write_text(leaf + "-----END CERTIFICATE-----\n")
    (work / "chain.pem").write_text("-----END CERTIFICATE-----\n".join(rest))
    port = free_port()
    server = subprocess.Popen(
        ["openssl", "s_server", "-accept", str(port), flag, "-groups", "X25519",
         "-cert", str(work / "leaf.pem"), "-key", str(certs.server_key),
         "-cert_chain", str(work / "chain.pem"), "-quiet", "-naccept", "1000000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        completed = subprocess.run(
            ["openssl", "s_time", "-connect", f"127.0.0.1:{port}", "-new", flag,
             "-time", str(seconds)],
            capture_output=True, text=True, timeout=seconds + 60,
        )  # fmt: skip
    finally:
        server.terminate()
        server.wait(5)
    match = re.search(r"(\d+) connections in (\d+) real seconds", completed.stdout)
    if not match:
        raise SystemExit(f"cannot read s_time's output:\n{completed.stdout}{completed.stderr}")
    count, real = int(match.group(1)), int(match.group(2))
    return {"handshakes": count, "per_second": count / real}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300, help="iotsecbench handshakes per pair")
    parser.add_argument("--seconds", type=int, default=10, help="s_time duration per pair")
    parser.add_argument("--stacks", default="openssl", help="comma-separated client stacks")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        for stack in args.stacks.split(","):
            for version in VERSIONS[stack]:
                slug = f"{stack}-{version}"
                ours = iotsecbench_rate(work / slug, args.reps, stack, version)
                theirs = openssl_rate(work / f"openssl-{slug}", args.seconds, version)
                rows.append((stack, version, ours, theirs))
    print(
        "| stack | TLS | iotsecbench connections/s (TLS wall, TLS CPU, connect→CONNACK ms) "
        "| `openssl s_time -new`/s | ratio s_time / ours | overhead per connection |"
    )
    print("|---|---|---|---|---|---|")
    for stack, version, ours, theirs in rows:
        overhead_ms = 1e3 / ours["per_second"] - 1e3 / theirs["per_second"]
        print(f"| {stack} | {version} | {ours['per_second']:.1f} ({ours['tls_wall_ms']:.3f}, "
              f"{ours['tls_cpu_ms']:.3f}, {ours['connect_ms']:.3f}) | "
              f"{theirs['per_second']:.1f} | {theirs['per_second'] / ours['per_second']:.2f} | "
              f"{overhead_ms:.3f} ms |")  # fmt: skip


if __name__ == "__main__":
    main()
