"""Helpers of the packet-capture tests: Debian's tshark (read only through its command line),
the Lua dissector's path, and a pcap writer for hand-made MQTT packets."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

DISSECTOR = REPO / "docs" / "wireshark" / "iotsecbench.lua"


def tshark() -> str:
    """tshark's path; the test skips (a failure under CI=true) without it."""
    found = shutil.which("tshark")
    if not found:
        pytest.skip("tshark (wireshark) not installed: scripts/setup.sh --dev installs it")
    return found


def tshark_fields(
    capture: Path, fields: list[str], *options: str, display_filter: str = ""
) -> list[list[str]]:
    """One row per packet (that passes ``display_filter``) of the named fields' values."""
    argv = [tshark(), "-r", str(capture), *options, "-T", "fields", "-E", "separator=/t"]
    for name in fields:
        argv += ["-e", name]
    if display_filter:
        argv += ["-Y", display_filter]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Lua: Error" not in result.stderr and "lua_script" not in result.stderr, result.stderr
    return [line.split("\t") for line in result.stdout.splitlines()]


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def mqtt_publish(topic: str, payload: bytes) -> bytes:
    """An MQTT 3.1.1 PUBLISH at QoS 0 (§3.3)."""
    body = struct.pack(">H", len(topic)) + topic.encode() + payload
    length, remaining = bytearray(), len(body)
    while True:
        byte, remaining = remaining % 128, remaining // 128
        length.append(byte | (0x80 if remaining else 0))
        if not remaining:
            break
    return b"\x30" + bytes(length) + body


def write_pcap(path: Path, segments: list[bytes], port: int = 1883) -> None:
    """A classic pcap of one TCP stream 127.0.0.1:40000 → :port carrying ``segments``."""
    records = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]  # Ethernet
    sequence = 1000
    for index, data in enumerate(segments):
        tcp = struct.pack(">HHIIBBHHH", 40000, port, sequence, 1, 5 << 4, 0x18, 65535, 0, 0)
        total = 20 + len(tcp) + len(data)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, index, 0, 64, 6, 0, bytes([127, 0, 0, 1]),
                         bytes([127, 0, 0, 1]))  # fmt: skip
        ip = ip[:10] + struct.pack(">H", _checksum(ip)) + ip[12:]
        frame = b"\0" * 12 + b"\x08\x00" + ip + tcp + data
        records.append(struct.pack("<IIII", 1_700_000_000 + index, 0, len(frame), len(frame)))
        records.append(frame)
        sequence += len(data)
    path.write_bytes(b"".join(records))
