"""Synthetic handshake-time tables made from a known device profile (energy.timings' tests
and calibrate --handshakes')."""

from __future__ import annotations

import numpy as np

from iotsecbench.energy.handshake import handshake_time
from iotsecbench.energy.profile import load_profile
from iotsecbench.energy.timings import HandshakeTiming
from iotsecbench.energy.uncertainty import point_values
from iotsecbench.security.tls.operations import timed_handshake_operations

PROFILE = load_profile("esp32-wroom-32")
CONFIGURATIONS = [  # (version, group, signature): resumed and RSA-transport rows separate
    ("1.3", "x25519", "ecdsa-p256"),  # the overhead from the group prices
    ("1.3", "P-256", "ecdsa-p256"),
    ("1.3", "x25519", "rsa3072"),
    ("1.3", "x25519", "none"),
    ("1.2", "none", "rsa3072"),
]
# What the device really does (the start profile differs in each of these)
TRUTH = {
    "x25519-derive.per_operation": 9.0,
    "ecdh-p256-derive.per_operation": 30.0,
    "ecdsa-p256-verify.per_operation": 80.0,
    "rsa3072-public.per_operation": 6.0,
    "ecdsa-p256-verify.clock_scaled_share": 0.9,
    "rsa3072-public.clock_scaled_share": 0.3,
    "extra_core_slowdown": 0.12,
    "handshake_overhead": 5.0,
}


def synthetic_rows(noise: float, seed: int = 1) -> tuple[list[HandshakeTiming], list]:
    values = {**point_values(PROFILE), **TRUTH}
    generator = np.random.default_rng(seed)
    rows, operations = [], []
    for version, group, signature in CONFIGURATIONS:
        ops = timed_handshake_operations(version, group, signature)
        for mhz in (80, 160, 240):
            for cores in (1, 2):
                true = float(handshake_time(PROFILE, values, ops, mhz, cores).seconds)
                seconds = true * (1 + noise * generator.standard_normal())
                rows.append(HandshakeTiming(len(rows) + 2, "esp32", version, group, signature,
                                            mhz, cores, seconds, False, 20))  # fmt: skip
                operations.append(ops)
    return rows, operations


HEADER = "device,tls_version,group,signature_algorithm,clock_mhz,cores,seconds,network_included,n"
