"""The wire's forwarding decisions (loss, delay, jitter, order, flooding) without sockets."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from iotsecbench.lab.network import HOST_MACS
from iotsecbench.lab.network_wire import Wire


class FakeSocket:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send(self, frame: bytes) -> int:
        self.sent.append(frame)
        return len(frame)


def make_wire(tmp_path: Path, shapes: dict[str, Any], seed: int = 1) -> Wire:
    wire = Wire(
        {
            "ports": {host: {"ifname": host, "mac": mac} for host, mac in HOST_MACS.items()},
            "shapes": shapes,
            "seed": seed,
            "counters_path": str(tmp_path / "counters.json"),
        }
    )
    for port in wire.ports.values():
        port.sock = FakeSocket()  # type: ignore[assignment]
    return wire


def frame(destination: str, index: int = 0) -> bytes:
    mac = bytes.fromhex(destination.replace(":", ""))
    return mac + bytes.fromhex(HOST_MACS["emitter"].replace(":", "")) + index.to_bytes(4, "big")


def test_loss_is_seeded_and_near_its_probability(tmp_path: Path) -> None:
    shapes = {"emitter": {"up": {"loss_percent": 5.0}}}
    delivered = []
    for _ in range(2):
        wire = make_wire(tmp_path, shapes, seed=7)
        for index in range(20_000):
            wire._accept(wire.ports["emitter"], frame(HOST_MACS["broker"], index), 0)
        delivered.append(wire.ports["broker"].sock.sent)  # type: ignore[union-attr]
    assert delivered[0] == delivered[1]  # same seed, same losses
    lost = 20_000 - len(delivered[0])
    assert 0.045 < lost / 20_000 < 0.055
    counters = wire.counters()["links"]["emitter"]["up"]
    assert counters["frames"] == 20_000 and counters["dropped"] == lost


def test_delay_adds_up_along_the_path_and_jitter_never_reorders(tmp_path: Path) -> None:
    shapes = {
        "emitter": {"up": {"delay_ms": 50.0, "jitter_ms": 10.0}},
        "broker": {"down": {"delay_ms": 5.0}},
    }
    wire = make_wire(tmp_path, shapes)
    gap_ns = 25_000_000  # wider than the jitter's range: ordering rarely holds a frame back
    for index in range(2000):
        wire._accept(wire.ports["emitter"], frame(HOST_MACS["broker"], index), index * gap_ns)
    departures = [entry[0] for entry in sorted(wire.pending, key=lambda e: e[1])]
    offsets = [(d - i * gap_ns) / 1e6 for i, d in enumerate(departures)]
    assert departures == sorted(departures)  # a frame never overtakes the one before it
    assert 54.0 < statistics.mean(offsets) < 56.0
    assert min(offsets) >= 45.0 - 0.001
    assert max(offsets) > 64.0  # uniform in [45, 65] ms


def test_dense_frames_under_jitter_queue_behind_each_other(tmp_path: Path) -> None:
    # Frames closer together than the jitter's range wait for the one before them (FIFO
    # link), so their mean delay rises towards delay + jitter (docs/network.md).
    wire = make_wire(tmp_path, {"emitter": {"up": {"delay_ms": 50.0, "jitter_ms": 10.0}}})
    for index in range(2000):
        wire._accept(wire.ports["emitter"], frame(HOST_MACS["broker"], index), index * 1_000_000)
    departures = [entry[0] for entry in sorted(wire.pending, key=lambda e: e[1])]
    offsets = [(d - i * 1_000_000) / 1e6 for i, d in enumerate(departures)]
    assert departures == sorted(departures)
    assert statistics.mean(offsets) > 55.0


def test_broadcast_is_flooded_to_the_other_ports(tmp_path: Path) -> None:
    wire = make_wire(tmp_path, {})
    wire._accept(wire.ports["emitter"], frame("ff:ff:ff:ff:ff:ff"), 0)
    sent = {host: len(port.sock.sent) for host, port in wire.ports.items()}  # type: ignore[union-attr]
    assert sent == {"broker": 1, "emitter": 0, "receiver": 1}
    wire._accept(wire.ports["emitter"], frame("02:00:00:00:00:99"), 0)
    assert wire.unknown_destination == 1
    wire.write_counters()
    assert (tmp_path / "counters.json").exists()
