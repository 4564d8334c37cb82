"""Our C lightweight ciphers against what they replaced, same process, same CPU, interleaved.

* Salsa20 + keyed BLAKE2b (the `payload-schemes` study's scheme): one call into
  ``_lightweight.salsa20_blake2b_seal`` against pycryptodome's Salsa20 then hashlib's BLAKE2b
  with the Python glue between them (the scheme's path where the extension is not built);
* SPECK128 and SIMON128 in CTR mode: ``_lightweight.ctr`` against simonspeckciphers (pure
  Python, the ``-purepy`` schemes' code).

Per size, ``--pairs`` interleaved pairs of timed batches (A then B, then B then A), the ratio
B / A per pair; the median ratio and its range are printed. Pinned to ``--cpu``.

    .venv/bin/python benchmarks/bench_lightweight_c.py --cpu 1
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import time
from collections.abc import Callable

from Crypto.Cipher import Salsa20
from simon import SimonCipher
from speck import SpeckCipher

from iotsecbench.security.schemes import _lightweight


def batch_ns(function: Callable[[], object], calls: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(calls):
        function()
    return (time.perf_counter_ns() - start) / calls


def paired(a: Callable[[], object], b: Callable[[], object], calls: int, pairs: int) -> tuple:
    a_ns, b_ns, ratios = [], [], []
    for i in range(pairs):
        first, second = (a, b) if i % 2 == 0 else (b, a)
        x, y = batch_ns(first, calls), batch_ns(second, calls)
        ta, tb = (x, y) if i % 2 == 0 else (y, x)
        a_ns.append(ta)
        b_ns.append(tb)
        ratios.append(tb / ta)
    return statistics.median(a_ns), statistics.median(b_ns), ratios


def row(case: str, a: float, b: float, ratios: list[float]) -> None:
    median, low, high = statistics.median(ratios), min(ratios), max(ratios)
    print(f"| {case} | {a:,.0f} | {b:,.0f} | {median:.2f} ({low:.2f}–{high:.2f}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    parser.add_argument("--pairs", type=int, default=11)
    args = parser.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    enc, mac, nonce, prefix = os.urandom(16), os.urandom(32), os.urandom(8), os.urandom(21)
    print("| case | bytes | C ns | replaced ns | replaced / C (median, range) |")
    print("|---|---|---|---|---|")
    for size in (64, 1024, 10240):
        data = os.urandom(size)

        def ours(data: bytes = data) -> bytes:
            return _lightweight.salsa20_blake2b_seal(enc, mac, nonce, prefix, data)

        def libraries(data: bytes = data) -> bytes:
            c = Salsa20.new(key=enc, nonce=nonce).encrypt(data)
            return c + hashlib.blake2b(prefix + c, key=mac, digest_size=32).digest()

        assert ours() == libraries()
        a, b, ratios = paired(ours, libraries, max(20, 200_000 // (size + 64)), args.pairs)
        row(f"Salsa20 + BLAKE2b seal vs pycryptodome + hashlib | {size}", a, b, ratios)
    initial, block_data = os.urandom(16), os.urandom(1024)
    counter = int.from_bytes(initial, "big")
    for name, cipher, pure_class in (
        ("SPECK128/128", _lightweight.SPECK, SpeckCipher),
        ("SIMON128/128", _lightweight.SIMON, SimonCipher),
    ):
        key = os.urandom(16)
        round_keys = _lightweight.schedule(cipher, key)
        pure = pure_class(int.from_bytes(key, "big"), key_size=128, block_size=128, mode="ECB")

        def c_ctr(cipher: int = cipher, round_keys: bytes = round_keys) -> bytes:
            return _lightweight.ctr(cipher, round_keys, initial, block_data)

        def pure_ctr(pure: object = pure) -> bytes:
            blocks = (pure.encrypt(counter + i) for i in range(64))  # type: ignore[attr-defined]
            stream = b"".join(block.to_bytes(16, "big") for block in blocks)
            mixed = int.from_bytes(block_data, "big") ^ int.from_bytes(stream, "big")
            return mixed.to_bytes(1024, "big")

        assert c_ctr() == pure_ctr()
        a, b, ratios = paired(c_ctr, pure_ctr, 20, args.pairs)
        row(f"{name} CTR vs simonspeckciphers | 1024", a, b, ratios)


if __name__ == "__main__":
    main()
