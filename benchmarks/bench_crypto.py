"""iotsecbench's crypto measurement against `openssl speed`, in the same run.

For every scheme whose bulk cipher OpenSSL also implements, this measures the scheme's seal
cost per byte at 4096 B with `iotsecbench bench crypto`'s own harness and `openssl speed -evp
<cipher>` at its 8192-byte block size, and prints the ratio (issue 5's goal: AES-128-GCM within
1.3x). OpenSSL runs its primitive in a C loop on one buffer; iotsecbench pays a Python call,
framing, a fresh nonce and AAD per message — the ratio is the price of measuring through the
real scheme. The harness's own per-call cost (the identity scheme) is printed too.

Run: .venv/bin/python benchmarks/bench_crypto.py [--seconds 2] [--repetitions 31]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys

from iotsecbench.bench.crypto import environment, run_crypto_benchmark

PAYLOAD_BYTES = 4096
OPENSSL_BLOCK_BYTES = 8192
# scheme (its bulk cipher) -> `openssl speed -evp` name of the same primitive
OPENSSL_EQUIVALENTS = {
    "psk-aes128-gcm": "aes-128-gcm",
    "psk-aes256-gcm": "aes-256-gcm",
    "psk-chacha20-poly1305": "chacha20-poly1305",
    "psk-aes128-ctr-hmac": "aes-128-ctr",  # + HMAC-SHA256 in the scheme: compared to CTR alone
    "psk-aes256-ctr-hmac": "aes-256-ctr",
    "psk-aes128-cbc-hmac": "aes-128-cbc",
    "psk-aes256-cbc-hmac": "aes-256-cbc",
    "psk-aes128-cbc": "aes-128-cbc",
    "psk-tinyaes128-ctr-hmac": "aes-128-ctr",
}


def openssl_ns_per_byte(cipher: str, seconds: int) -> float | None:
    """ns/byte of `openssl speed -evp CIPHER` at 8192-byte blocks (machine-readable -mr)."""
    if shutil.which("openssl") is None:
        return None
    completed = subprocess.run(
        [
            "openssl",
            "speed",
            "-evp",
            cipher,
            "-bytes",
            str(OPENSSL_BLOCK_BYTES),
            "-seconds",
            str(seconds),
            "-mr",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    sizes: list[int] = []
    for line in completed.stdout.splitlines():
        fields = line.split(":")
        if line.startswith("+H:"):
            sizes = [int(value) for value in fields[1:]]
        elif line.startswith("+F:") and sizes:
            rates = [float(value) for value in fields[3:]]  # bytes per second per size
            rate = dict(zip(sizes, rates, strict=False))[OPENSSL_BLOCK_BYTES]
            return 1e9 / rate
    return None


def pyca_aes128_gcm_ns_per_byte(repetitions: int) -> float:
    """The library call alone (no framing, fixed nonce): the floor under psk-aes128-gcm."""
    import os
    import statistics
    import time

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead, nonce, aad = AESGCM(os.urandom(16)), os.urandom(12), os.urandom(21)
    payload, batch = os.urandom(PAYLOAD_BYTES), 256
    encrypt = aead.encrypt
    for _ in range(batch):
        encrypt(nonce, payload, aad)
    samples = []
    for _ in range(repetitions):
        start = time.perf_counter_ns()
        for _ in range(batch):
            encrypt(nonce, payload, aad)
        samples.append((time.perf_counter_ns() - start) / batch)
    return statistics.median(samples) / PAYLOAD_BYTES


def openssl_version() -> str:
    if shutil.which("openssl") is None:
        return "not installed"
    return subprocess.run(["openssl", "version"], capture_output=True, text=True).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=2, help="openssl speed time per cipher")
    parser.add_argument("--repetitions", type=int, default=31)
    parser.add_argument("--rounds", type=int, default=3, help="alternations ours/openssl")
    parser.add_argument("--json", help="write the figures as JSON")
    args = parser.parse_args(argv)

    # Ours and openssl alternate per scheme, `--rounds` times, so both see the same machine
    # load; the medians over rounds are compared.
    rows = []
    for scheme, cipher in OPENSSL_EQUIVALENTS.items():
        ours, references = [], []
        for _ in range(args.rounds):
            bench = run_crypto_benchmark(
                [scheme], [PAYLOAD_BYTES], repetitions=args.repetitions, key_establishments=[]
            )
            ours.append(bench.results[0])
            references.append(openssl_ns_per_byte(cipher, args.seconds))
        result = sorted(ours, key=lambda r: r.seal.median_ns)[len(ours) // 2]
        valid = sorted(r for r in references if r)
        reference = valid[len(valid) // 2] if valid else None
        ratio = result.seal_ns_per_byte / reference if reference else None
        rows.append(
            {
                "scheme": result.scheme,
                "openssl_cipher": cipher,
                "seal_ns_per_byte": result.seal_ns_per_byte,
                "seal_q1_ns_per_byte": result.seal.q1_ns / PAYLOAD_BYTES,
                "seal_q3_ns_per_byte": result.seal.q3_ns / PAYLOAD_BYTES,
                "openssl_ns_per_byte": reference,
                "ratio": ratio,
                "harness_ns_per_call": result.harness_ns,
                "provenance": f"{result.provenance['library']} {result.provenance['version']}",
            }
        )
    raw = pyca_aes128_gcm_ns_per_byte(args.repetitions)
    env = {**environment(), "openssl_cli": openssl_version()}
    print(f"environment: {json.dumps(env)}")
    print(
        f"payload {PAYLOAD_BYTES} B (iotsecbench seal) vs openssl speed at {OPENSSL_BLOCK_BYTES} B"
    )
    header = (
        f"{'scheme':26} {'openssl -evp':18} {'ours ns/B':>10} {'openssl ns/B':>13} {'ratio':>7}"
    )
    print(header + f" {'harness ns/call':>16}")
    for row in rows:
        reference = row["openssl_ns_per_byte"]
        print(
            f"{row['scheme']:26} {row['openssl_cipher']:18} {row['seal_ns_per_byte']:10.3f} "
            f"{reference if reference else float('nan'):13.3f} "
            f"{row['ratio'] if row['ratio'] else float('nan'):7.2f} "
            f"{row['harness_ns_per_call']:16.0f}"
        )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"environment": env, "rows": rows}, handle, indent=2)
    gcm = next(row for row in rows if row["scheme"] == "psk-aes128-gcm")
    print(
        f"pyca AESGCM.encrypt alone @4096 B (same harness, no framing): {raw:.3f} ns/B — "
        f"library vs openssl {raw / gcm['openssl_ns_per_byte']:.2f}x, "
        f"scheme vs library {gcm['seal_ns_per_byte'] / raw:.2f}x"
        if gcm["openssl_ns_per_byte"]
        else f"pyca AESGCM.encrypt alone: {raw:.3f} ns/B"
    )
    if gcm["ratio"] is not None:
        verdict = "within" if gcm["ratio"] <= 1.3 else "NOT within"
        print(f"AES-128-GCM @4096 B: {gcm['ratio']:.2f}x openssl speed ({verdict} the 1.3x goal)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
