"""Post-quantum TLS 1.3 on a device stack: the native agent on wolfSSL 5.9.4 (stack
``wolfssl-5.9``, built from registry source with wolfSSL's embedded-profile settings) against
mosquitto on OpenSSL 3.5.5 — per profile, the stack's heap peak during the handshake, the
handshake's CPU time (the agent's thread) and its TLS messages' bytes — classical vs hybrid vs
pure ML-KEM key exchange, RSA-2048 / ECDSA P-256 vs ML-DSA-44 certificates, all in one
``bench handshake`` run (interleaved, so the classical reference shares the machine's state);
with ``--reference`` the same classical profiles on Debian's wolfSSL 5.5 (its desktop build)
after it.

    .venv/bin/python benchmarks/bench_native_pq.py [--reps 30] [--cpu 1] [--reference]

Prints a Markdown table of medians (docs/post-quantum.md, docs/native-agents.md and
benchmarks/README.md quote it). The whole benchmark (broker and agent) runs on ``--cpu``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PROFILES = (
    "tls1.3/x25519/ecdsa-p256",
    "tls1.3/x25519mlkem768/ecdsa-p256",
    "tls1.3/mlkem768/ecdsa-p256",
    "tls1.3/mlkem512/ecdsa-p256",
    "tls1.3/mlkem1024/ecdsa-p256",
    "tls1.3/x25519/rsa2048",
    "tls1.3/x25519/mldsa44",
    "tls1.3/x25519mlkem768/mldsa44",
    "tls1.3/mlkem768/mldsa44",
)
REFERENCE = ("tls1.3/x25519/ecdsa-p256", "tls1.3/x25519/rsa2048")


def bench(stack: str, profiles: tuple[str, ...], reps: int, cpu: int, work: Path) -> list[dict]:
    document = work / f"{stack}.json"
    command = [
        "taskset", "-c", str(cpu), sys.executable, "-m", "iotsecbench", "bench", "handshake",
        "--stack", stack, "--profiles", ",".join(profiles), "--reps", str(reps),
        "--out", str(work / stack), "--json", str(document), "--quiet",
    ]  # fmt: skip
    subprocess.run(command, check=True)
    return json.loads(document.read_text())["profiles"]


def row(stack: str, profile: dict) -> str:
    samples = profile["samples"]
    heap = statistics.median(s["tls_heap_peak_bytes"] for s in samples) / 1024
    cpu = statistics.median(s["tls"]["thread_cpu_ns"] for s in samples) / 1e6
    wall = statistics.median(s["tls"]["wall_ns"] for s in samples) / 1e6
    # The handshake's TLS messages as they crossed the wire (the transcript: protected records
    # by their length): TCP_INFO's bytes add the record headers and, when they arrive before
    # the handshake's end is read, the server's two NewSessionTickets (~540 B), which made the
    # median depend on timing.
    sent = statistics.median(s["negotiated"]["handshake_bytes_sent"] for s in samples)
    received = statistics.median(s["negotiated"]["handshake_bytes_received"] for s in samples)
    hello = profile["median_wire"]["client_hello_bytes"]
    negotiated = profile["negotiated"]
    return (
        f"| {stack} | `{profile['tls_profile_name']}` | {negotiated['group']} / "
        f"{negotiated['certificate']} | {heap:,.1f} | {cpu:.2f} | {wall:.2f} | "
        f"{sent:,.0f} / {received:,.0f} | {hello:,} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--cpu", type=int, default=1)
    parser.add_argument("--reference", action="store_true", help="Debian's wolfSSL 5.5 too")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="iotsb-native-pq-") as scratch:
        work = Path(scratch)
        results = [("wolfssl-5.9", p) for p in bench("wolfssl-5.9", PROFILES, options.reps,
                                                      options.cpu, work)]  # fmt: skip
        if options.reference:
            results += [("wolfssl", p) for p in bench("wolfssl", REFERENCE, options.reps,
                                                       options.cpu, work)]  # fmt: skip
    print(f"{options.reps} handshakes per profile, medians, CPU {options.cpu}")
    print("| stack | profile | group / certificate | heap peak KiB | TLS CPU ms | TLS wall ms "
          "| handshake bytes sent / received | ClientHello B |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for stack, profile in results:
        print(row(stack, profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
