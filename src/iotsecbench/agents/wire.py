"""The application message inside every payload scheme (wire format of the plaintext).

``seq`` (8 bytes, big-endian) | ``t_created_ns`` (8 bytes, big-endian, CLOCK_MONOTONIC) |
filler up to the configured payload size. The filler is pseudo-random (seeded), so that no
layer can compress it and every configuration carries the same bytes.
"""

from __future__ import annotations

import random
import struct

HEADER = struct.Struct(">QQ")


def make_filler(payload_bytes: int, seed: int) -> bytes:
    """Deterministic incompressible filler for the part of the payload after the header."""
    return random.Random(seed).randbytes(max(0, payload_bytes - HEADER.size))


def encode(seq: int, t_created_ns: int, filler: bytes) -> bytes:
    return HEADER.pack(seq, t_created_ns) + filler


def decode(plaintext: bytes) -> tuple[int, int]:
    """``(seq, t_created_ns)``; ``ValueError`` if the plaintext is shorter than the header."""
    if len(plaintext) < HEADER.size:
        raise ValueError(f"plaintext of {len(plaintext)} B is shorter than the 16-byte header")
    return HEADER.unpack_from(plaintext)
