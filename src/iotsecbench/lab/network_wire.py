"""The wire: a user-space Ethernet switch that adds one-way delay, jitter and random loss.

Runs inside the experiment's ``wire`` network namespace as
``python -m iotsecbench.lab.network_wire --config FILE``. Each host (emitter, broker,
receiver) is joined to this namespace by a veth pair; the wire reads every frame a host sends
from the wire-side end with an ``AF_PACKET`` socket, decides its fate with the shapes of the
source link's *up* direction and the destination link's *down* direction, and writes it to
the destination port at its departure time.

Why user space: this kernel has neither ``netem`` nor ``fq``/``etf`` (the qdiscs that honour
earliest-departure-time stamps), so no kernel path can hold a packet for a set time. The
approach is Mahimahi's (Netravali et al., USENIX ATC 2015: delay and loss "shells" as user-
space packet forwarders). Rate limits stay in the kernel (``tbf`` on the egress of each
link, set up by ``lab/network.py``).

Model, per frame from port S to port D:
  - dropped with probability ``loss(S.up)``, then with ``loss(D.down)`` (independent draws
    from a seeded RNG, so the loss pattern of a run is reproducible);
  - departure = arrival + delay(S.up) + delay(D.down) + a uniform jitter in
    ``[-jitter, +jitter]`` per direction, clamped so the total is never negative (netem's
    default jitter distribution);
  - departures of one (S, D) path never decrease: a frame never overtakes the one before
    it, as on a serial link (netem reorders under jitter; we choose not to).

Broadcast and multicast frames (ARP) are flooded to every other port with the same rules.
On SIGTERM the wire writes its counters (frames and bytes in, dropped, forwarded per link
direction) to the counters file and exits 0.
"""

from __future__ import annotations

import argparse
import ctypes
import heapq
import json
import os
import random
import select
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4  # sll_pkttype of frames this host sent (our own writes): ignore them
PR_SET_TIMERSLACK = 29
RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024
MAX_FRAME_BYTES = 65536
EARLY_WAKE_NS = 300_000  # wake this long before a far departure, then wait out the rest


@dataclass
class DirectionState:
    """Parameters and counters of one direction of one link."""

    delay_ns: int = 0
    jitter_ns: int = 0
    loss_probability: float = 0.0
    frames: int = 0  # frames that entered this direction
    bytes: int = 0
    dropped: int = 0  # frames dropped by the emulated loss

    @classmethod
    def from_shape(cls, shape: dict[str, Any]) -> DirectionState:
        return cls(
            delay_ns=round(float(shape.get("delay_ms", 0.0)) * 1e6),
            jitter_ns=round(float(shape.get("jitter_ms", 0.0)) * 1e6),
            loss_probability=float(shape.get("loss_percent", 0.0)) / 100.0,
        )

    def offset_ns(self, rng: random.Random) -> int:
        if self.jitter_ns:
            return self.delay_ns + rng.randint(-self.jitter_ns, self.jitter_ns)
        return self.delay_ns


@dataclass
class Port:
    """One wire-side veth end, facing one host."""

    host: str
    ifname: str
    mac: bytes
    up: DirectionState  # host → wire
    down: DirectionState  # wire → host
    sock: socket.socket | None = None
    forwarded: int = 0  # frames written to this port
    send_errors: int = 0
    last_departure_ns: dict[str, int] = field(default_factory=dict)  # per source host


def _lower_timer_slack() -> None:
    """Ask for 1 ns timer slack (default 50 µs) so sleeps end when asked (PR_SET_TIMERSLACK)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Wire:
    """The forwarding loop. ``run()`` returns when ``stop()`` is called (SIGTERM)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.rng = random.Random(int(config.get("seed", 0)))
        self.ports: dict[str, Port] = {}
        for host, port in config["ports"].items():
            shape = config.get("shapes", {}).get(host, {})
            self.ports[host] = Port(
                host=host,
                ifname=port["ifname"],
                mac=bytes.fromhex(port["mac"].replace(":", "")),
                up=DirectionState.from_shape(shape.get("up", {})),
                down=DirectionState.from_shape(shape.get("down", {})),
            )
        self.by_mac = {port.mac: port for port in self.ports.values()}
        self.counters_path = Path(config["counters_path"])
        self.pending: list[tuple[int, int, str, bytes]] = []  # (departure, order, host, frame)
        self._order = 0
        self._stopping = False
        self.unknown_destination = 0

    def open(self) -> None:
        for port in self.ports.values():
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)
            sock.bind((port.ifname, ETH_P_ALL))
            sock.setblocking(False)
            port.sock = sock

    def stop(self, *_: object) -> None:
        self._stopping = True

    def _destinations(self, source: Port, frame: bytes) -> list[Port]:
        destination = frame[:6]
        if destination[0] & 1:  # group bit: broadcast or multicast → flood
            return [p for p in self.ports.values() if p is not source]
        port = self.by_mac.get(destination)
        if port is None or port is source:
            self.unknown_destination += 1
            return []
        return [port]

    def _accept(self, source: Port, frame: bytes, now_ns: int) -> None:
        source.up.frames += 1
        source.up.bytes += len(frame)
        if source.up.loss_probability and self.rng.random() < source.up.loss_probability:
            source.up.dropped += 1
            return
        up_offset = source.up.offset_ns(self.rng)
        for destination in self._destinations(source, frame):
            down = destination.down
            down.frames += 1
            down.bytes += len(frame)
            if down.loss_probability and self.rng.random() < down.loss_probability:
                down.dropped += 1
                continue
            departure = now_ns + max(0, up_offset + down.offset_ns(self.rng))
            previous = destination.last_departure_ns.get(source.host, 0)
            departure = max(departure, previous)
            destination.last_departure_ns[source.host] = departure
            if departure <= now_ns:
                self._send(destination, frame)
            else:
                self._order += 1
                heapq.heappush(self.pending, (departure, self._order, destination.host, frame))

    def _send(self, destination: Port, frame: bytes) -> None:
        assert destination.sock is not None
        try:
            destination.sock.send(frame)
            destination.forwarded += 1
        except OSError:
            # A full device queue (the kernel rate limiter's buffer) drops the frame, as a
            # router's full queue would; TCP sees it as a loss.
            destination.send_errors += 1

    def _release_due(self) -> None:
        now = time.monotonic_ns()
        while self.pending and self.pending[0][0] <= now:
            _, _, host, frame = heapq.heappop(self.pending)
            self._send(self.ports[host], frame)

    def run(self) -> None:
        sockets = {port.sock: port for port in self.ports.values() if port.sock is not None}
        readers = list(sockets)
        while not self._stopping:
            timeout = 0.5
            if self.pending:
                remaining_ns = self.pending[0][0] - time.monotonic_ns()
                # select() lets the kernel wake up late by 0.1 % of the timeout (its timer
                # slack estimate); sleep to just before a far departure, then once more for
                # the short rest, whose slack is nanoseconds.
                early_ns = max(EARLY_WAKE_NS, remaining_ns // 500)
                if remaining_ns > early_ns * 2:
                    remaining_ns -= early_ns
                timeout = max(0.0, remaining_ns / 1e9)
            try:
                readable, _, _ = select.select(readers, [], [], timeout)
            except InterruptedError:
                continue
            for sock in readable:
                port = sockets[sock]
                while True:
                    try:
                        frame, address = sock.recvfrom(MAX_FRAME_BYTES)
                    except BlockingIOError:
                        break
                    if address[2] == PACKET_OUTGOING:
                        continue
                    self._accept(port, frame, time.monotonic_ns())
            self._release_due()

    def counters(self) -> dict[str, Any]:
        links = {}
        for host, port in self.ports.items():
            links[host] = {
                "up": {
                    "frames": port.up.frames,
                    "bytes": port.up.bytes,
                    "dropped": port.up.dropped,
                },
                "down": {
                    "frames": port.down.frames,
                    "bytes": port.down.bytes,
                    "dropped": port.down.dropped,
                    "forwarded": port.forwarded,
                    "send_errors": port.send_errors,
                },
            }
        return {
            "links": links,
            "unknown_destination": self.unknown_destination,
            "pending_at_exit": len(self.pending),
        }

    def write_counters(self) -> None:
        temporary = self.counters_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.counters(), indent=1))
        os.replace(temporary, self.counters_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path)
    arguments = parser.parse_args(argv)
    wire = Wire(json.loads(arguments.config.read_text()))
    signal.signal(signal.SIGTERM, wire.stop)
    signal.signal(signal.SIGINT, wire.stop)
    _lower_timer_slack()
    wire.open()
    print("READY", flush=True)
    try:
        wire.run()
    finally:
        wire.write_counters()
    return 0


if __name__ == "__main__":
    sys.exit(main())
