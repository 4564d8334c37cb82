"""ML-KEM-768 encapsulation and decapsulation and ML-DSA-44 signing and verification per second
through the project's own code paths, beside ``openssl speed`` of OpenSSL 3.5.5 (the build
``security.pq_openssl`` makes) in the same run, on the same pinned CPU, rounds interleaved.

    .venv/bin/python benchmarks/bench_post_quantum.py [--rounds 3] [--seconds 1] [--cpu 1]

Three project paths: ML-KEM through OpenSSL 3.5.5 via ctypes (``pq_openssl.mlkem``, what
ML-KEM-512 uses; the same library as ``openssl speed``, so the ratio is the binding's cost),
ML-KEM-768 through ``cryptography`` (its bundled OpenSSL, a newer version: the ratio mixes the
binding with the version) and ML-DSA-44 through ``security.signatures`` (``cryptography``).
Each operation is timed as the key exchange performs it: encapsulation includes loading the
peer's raw key (the emitter gets it in the hello), decapsulation and signing use a loaded key.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import time
from collections.abc import Callable

from cryptography.hazmat.primitives.asymmetric import mlkem

from iotsecbench.security import pq_openssl
from iotsecbench.security.signatures import SUITES


def rate(operation: Callable[[], object], seconds: float) -> float:
    """Operations per second over about ``seconds`` of repeated calls."""
    count, start = 0, time.perf_counter()
    deadline = start + seconds
    while (now := time.perf_counter()) < deadline or count < 10:
        operation()
        count += 1
    return count / (now - start)


def project_rates(seconds: float) -> dict[str, float]:
    ossl_private, ossl_public = pq_openssl.mlkem(768)
    ossl_key = ossl_private.generate()
    ossl_raw = ossl_key.public_key().public_bytes_raw()
    _, ossl_ciphertext = ossl_public.from_public_bytes(ossl_raw).encapsulate()
    key = mlkem.MLKEM768PrivateKey.generate()
    raw = key.public_key().public_bytes_raw()
    _, ciphertext = mlkem.MLKEM768PublicKey.from_public_bytes(raw).encapsulate()
    suite = SUITES["mldsa44"]
    private, public = suite.generate()
    signer = suite.load_private(private)
    message = os.urandom(3700)  # about what the signed hybrid exchange signs
    signature = suite.sign(signer, message)
    return {
        "ML-KEM-768 encaps, OpenSSL 3.5.5 via ctypes": rate(
            lambda: ossl_public.from_public_bytes(ossl_raw).encapsulate(), seconds
        ),
        "ML-KEM-768 decaps, OpenSSL 3.5.5 via ctypes": rate(
            lambda: ossl_key.decapsulate(ossl_ciphertext), seconds
        ),
        "ML-KEM-768 encaps, cryptography": rate(
            lambda: mlkem.MLKEM768PublicKey.from_public_bytes(raw).encapsulate(), seconds
        ),
        "ML-KEM-768 decaps, cryptography": rate(lambda: key.decapsulate(ciphertext), seconds),
        "ML-DSA-44 sign, cryptography": rate(lambda: suite.sign(signer, message), seconds),
        "ML-DSA-44 verify, cryptography": rate(
            lambda: suite.verify(public, signature, message, "benchmark"), seconds
        ),
    }


def openssl_speed(seconds: float, cpu: int) -> dict[str, float]:
    """``openssl speed`` of the 3.5.5 build, pinned to ``cpu``: operations per second."""
    done = subprocess.run(
        ["taskset", "-c", str(cpu), str(pq_openssl.openssl_tool()), "speed", "-seconds",
         str(max(1, round(seconds))), "ML-KEM-768", "ML-DSA-44"],
        env=pq_openssl.library_environment(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    found: dict[str, float] = {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if fields and fields[0] == "ML-KEM-768" and len(fields) == 7:
            found["ML-KEM-768 encaps"], found["ML-KEM-768 decaps"] = map(float, fields[5:7])
        if fields and fields[0] == "ML-DSA-44" and len(fields) == 7:
            found["ML-DSA-44 sign"], found["ML-DSA-44 verify"] = map(float, fields[5:7])
    if len(found) != 4:
        raise SystemExit(f"could not read openssl speed's table:\n{done.stdout}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--cpu", type=int, default=1)
    args = parser.parse_args()
    os.sched_setaffinity(0, {args.cpu})
    ratios: dict[str, list[float]] = {}
    rates: dict[str, list[float]] = {}
    references: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        ours = project_rates(args.seconds)
        theirs = openssl_speed(args.seconds, args.cpu)
        for name, value in ours.items():
            reference = re.sub(r",.*", "", name)
            rates.setdefault(name, []).append(value)
            references.setdefault(reference, []).append(theirs[reference])
            ratios.setdefault(name, []).append(value / theirs[reference])
    print(f"{args.rounds} rounds of {args.seconds:g} s on CPU {args.cpu}; reference: "
          f"openssl speed of {pq_openssl.library_version()}")  # fmt: skip
    print("| operation, path | project ops/s (median) | openssl speed ops/s (median) | "
          "ratio per round |")  # fmt: skip
    print("|---|---|---|---|")
    for name, values in rates.items():
        reference = re.sub(r",.*", "", name)
        print(
            f"| {name} | {statistics.median(values):,.0f} | "
            f"{statistics.median(references[reference]):,.0f} | "
            f"{', '.join(f'{r:.2f}' for r in ratios[name])} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
