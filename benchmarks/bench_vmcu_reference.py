"""Cortex-M4 instruction counts of the handshakes' public-key operations (vmcu, under QEMU)
beside the published cycle counts of the field's reference benchmarks for that core.

    .venv/bin/python benchmarks/bench_vmcu_reference.py [--target cortex-m4] [--reps 25]

The references are cycles measured on real Cortex-M4 boards, of other implementations: hand-
written assembly (Lenngren's X25519 and P-256) and pqm4's portable C ("clean", PQClean) and
Cortex-M4 assembly ("m4f*"). Ours are *instructions* of mbedTLS 2.28 and wolfCrypt 5.9 built
as portable C for the target; on a Cortex-M4 a cycle count is at least the instruction count,
so ratio = our instructions / their cycles is a lower bound of the cycle ratio.
"""

from __future__ import annotations

import argparse
import sys

from iotsecbench.vmcu import TARGETS, count_operations

PQM4 = "pqm4 benchmarks.md, git cc2c1b992b60 (2026-06-19), NUCLEO-L4R5ZI at 24 MHz"
REFERENCES = {  # operation -> [(implementation, cycles, source)]
    "x25519-derive": [
        ("Lenngren, Thumb-2 assembly", 548_873,
         "github.com/Emill/X25519-Cortex-M4 README, git 1e4953db (Cortex-M4)"),
    ],
    "ecdh-p256-derive": [
        ("Lenngren, Thumb-2 assembly", 906_000,
         "github.com/Emill/P256-Cortex-M4 README, git ecd3ec22 (nRF52840, ICACHE on, -O2)"),
    ],
    "ecdsa-p256-sign": [("Lenngren, Thumb-2 assembly", 375_000, "as above")],
    "ecdsa-p256-verify": [("Lenngren, Thumb-2 assembly", 976_000, "as above")],
    "mlkem768-keygen": [("pqm4 clean", 988_722, PQM4), ("pqm4 m4fspeed", 642_096, PQM4)],
    "mlkem768-encaps": [("pqm4 clean", 1_138_225, PQM4), ("pqm4 m4fspeed", 658_754, PQM4)],
    "mlkem768-decaps": [("pqm4 clean", 1_387_984, PQM4), ("pqm4 m4fspeed", 707_827, PQM4)],
    "mldsa44-keygen": [("pqm4 clean", 1_874_405, PQM4), ("pqm4 m4f", 1_426_025, PQM4)],
    "mldsa44-sign": [("pqm4 clean (mean)", 7_925_955, PQM4), ("pqm4 m4f (mean)", 3_943_121, PQM4)],
    "mldsa44-verify": [("pqm4 clean", 2_063_096, PQM4), ("pqm4 m4f", 1_421_623, PQM4)],
}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="cortex-m4", choices=sorted(TARGETS))
    parser.add_argument("--reps", type=int, default=25, help="inputs per operation")
    args = parser.parse_args()
    counts = count_operations(
        TARGETS[args.target], ["x25519", "p256", "mlkem768", "mldsa44"], args.reps
    )
    print(f"| operation | ours: instructions ({args.target}, {args.reps} inputs) | "
          "reference | its cycles | ratio |")  # fmt: skip
    print("|---|---|---|---|---|")
    for count in counts:
        for name, cycles, _ in REFERENCES.get(count.operation, []):
            # Against a mean, our mean (ML-DSA signing varies with the message); else medians.
            ours = count.instructions_mean if "mean" in name else count.instructions
            label = "mean" if "mean" in name else "median"
            library = count.provenance.split(" (")[0]
            print(f"| {count.operation} | {ours:,.0f} ({label}, {library}) | {name} | "
                  f"{cycles:,} | {ours / cycles:.2f} |")  # fmt: skip
    print()
    for source in dict.fromkeys(s for refs in REFERENCES.values() for _, _, s in refs):
        if source != "as above":
            print(f"- {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
