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


def publish_packet_bytes(topic: str, qos: int, payload_bytes: int) -> int:
    """Size of the MQTT PUBLISH carrying ``payload_bytes`` on ``topic`` (MQTT 3.1.1 §3.3:
    fixed header, topic length + topic, packet id at QoS > 0)."""
    body = 2 + len(topic.encode()) + (2 if qos else 0) + payload_bytes
    length_bytes = 1 if body < 128 else 2 if body < 16384 else 3 if body < 2097152 else 4
    return 1 + length_bytes + body
