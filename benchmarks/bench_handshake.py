"""Handshakes per second: ``bench handshake`` against ``openssl s_time -new``, same run.

Both sides use TLS 1.3, X25519 and the same ECDSA P-256 certificate chain (lab/pki.py):

* iotsecbench: ``run_handshake_benchmark`` with ``tls1.3/x25519/ecdsa-p256`` against the
  embedded mosquitto — each handshake is a full paho-mqtt connection (TCP, TLS, CONNECT →
  CONNACK, DISCONNECT) with the TLS handshake measured and its negotiated parameters checked;
  the rate is measured connections over the span from the first TCP connect to the last
  CONNACK;
* OpenSSL: ``openssl s_time -new -tls1_3`` (C, new session each time, no application data)
  against ``openssl s_server -tls1_3 -groups X25519`` with the same certificate and chain.

The ratio says how many of OpenSSL's bare handshakes fit in one iotsecbench measurement; the
per-handshake overhead is the difference of the two mean times per handshake.

    .venv/bin/python benchmarks/bench_handshake.py --reps 300 --seconds 10
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


def iotsecbench_rate(work: Path, repetitions: int) -> dict[str, float]:
    profile = parse_profile("tls1.3/x25519/ecdsa-p256")
    bench = run_handshake_benchmark([profile], work, repetitions=repetitions, warmup=5)
    samples = bench.results[0].samples
    span_ns = samples[-1].t_connack_ns - samples[0].t_start_ns
    return {
        "handshakes": len(samples),
        "per_second": len(samples) / (span_ns / 1e9),
        "tls_wall_ms": bench.results[0].statistic("tls_wall_ns").mean / 1e6,
        "tls_cpu_ms": bench.results[0].statistic("tls_cpu_ns").mean / 1e6,
        "connect_ms": bench.results[0].statistic("connect_wall_ns").mean / 1e6,
    }


def openssl_rate(work: Path, seconds: int) -> dict[str, float]:
    certs = create_certificates(work / "pki", "ecdsa-p256")
    leaf, *rest = certs.server_cert.read_text().split("-----END CERTIFICATE-----\n")
    (work / "leaf.pem").write_text(leaf + "-----END CERTIFICATE-----\n")
    (work / "chain.pem").write_text("-----END CERTIFICATE-----\n".join(rest))
    port = free_port()
    server = subprocess.Popen(
        ["openssl", "s_server", "-accept", str(port), "-tls1_3", "-groups", "X25519",
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
            ["openssl", "s_time", "-connect", f"127.0.0.1:{port}", "-new", "-tls1_3",
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
    parser.add_argument("--reps", type=int, default=300, help="iotsecbench handshakes")
    parser.add_argument("--seconds", type=int, default=10, help="s_time duration")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        ours = iotsecbench_rate(work / "iotsecbench", args.reps)
        theirs = openssl_rate(work / "openssl", args.seconds)
    overhead_ms = 1e3 / ours["per_second"] - 1e3 / theirs["per_second"]
    print(f"iotsecbench bench handshake: {ours['handshakes']} handshakes, "
          f"{ours['per_second']:.1f}/s (TLS wall {ours['tls_wall_ms']:.3f} ms, TLS CPU "
          f"{ours['tls_cpu_ms']:.3f} ms, connect→CONNACK {ours['connect_ms']:.3f} ms)")  # fmt: skip
    print(f"openssl s_time -new:         {theirs['handshakes']} handshakes, "
          f"{theirs['per_second']:.1f}/s")  # fmt: skip
    print(f"ratio openssl / iotsecbench: {theirs['per_second'] / ours['per_second']:.2f}; "
          f"iotsecbench overhead per handshake: {overhead_ms:.3f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
