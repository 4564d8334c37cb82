"""The ``iotst`` method on a device's instruction counts (docs/device-client.md): where one
connection of the device client spent its instructions, in the classification groups the
scheduler-trace method uses (``analysis.iotst``), and what it would take in time on a device.

Pure functions on plain data. The firmware's ledger hands over *segments*: the instructions
from one event to the next, each started by a mark (``CLIENT_HELLO``, ``MQTT_CONNECT``, ``END``
…) or by bytes read or written, and split into buckets — the client's own instructions, the
polling while bytes had not arrived (network wait), the UART's byte moves (the emulated link's
driver) — with the client instructions spent inside each primitive family and their calls
(``primitives``, ``calls``: family → count). The caller adds to
each I/O segment the handshake messages the read or write completed (from the transcript of
the bytes on the wire); a message starts the group named after what the client does next
(``message_group``), exactly as the trace method's markers do, and I/O that completes no
message (a record header, application data) continues the group it falls in.

* The **network-invariant** count is the client bucket summed from ``CLIENT_HELLO`` (plain
  MQTT: ``MQTT_CONNECT``; the tcp role: ``KEY_EXCHANGE``) to ``END``: the network never runs
  in it, by construction.
* **With network wait** adds the wait bucket: the poll loop's instructions, which grow with how
  long the bytes took — an emulation's measure of waiting, not a device's.
* **Device time** (``replay``): the segments replayed on a device at a clock, each segment's
  client instructions × CPI / clock, each read waiting until the bytes it needs would have
  arrived — the bridge's measured delay of each received byte after the client's last bytes
  before it. Counted computing, measured network: labelled so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from iotsecbench.analysis.iotst import message_group

FAMILIES = ("pk", "sha2", "aes", "chacha20_poly1305", "mlkem", "mldsa")
BUCKETS = ("client", "wait", "io")
# A payload scheme's key exchange (run --target): over MQTT after the connection (publish.c:
# KEY_EXCHANGE .. KEY_EXCHANGE_END, a group of its own); the tcp role's whole count (frames.c)
KEY_EXCHANGE_MARK, KEY_EXCHANGE_END_MARK = "KEY_EXCHANGE", "KEY_EXCHANGE_END"
# The first that occurs opens the count; KEY_EXCHANGE opens the tcp role's (frames.c: its
# payload scheme's key exchange, no TLS, no MQTT; over MQTT it comes after END).
HANDSHAKE_MARKS = ("CLIENT_HELLO", "MQTT_CONNECT", KEY_EXCHANGE_MARK)
END_MARK = "END"
SETUP_MARK = "SETUP"


@dataclass
class CountedGroup:
    """One group's instructions in one connection."""

    client: int = 0  # the device's own: network-invariant
    wait: int = 0  # polling for bytes not yet there
    io: int = 0  # moving bytes through the emulated UART
    primitives: dict[str, int] = field(default_factory=dict)  # client instructions per family
    calls: dict[str, int] = field(default_factory=dict)  # primitive calls per family
    segments: int = 0

    def add(self, segment: Mapping[str, Any]) -> None:
        self.client += int(segment.get("client", 0))
        self.wait += int(segment.get("wait", 0))
        self.io += int(segment.get("io", 0))
        for family, count in (segment.get("primitives") or {}).items():
            self.primitives[family] = self.primitives.get(family, 0) + int(count)
        for family, count in (segment.get("calls") or {}).items():
            self.calls[family] = self.calls.get(family, 0) + int(count)
        self.segments += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "wait": self.wait,
            "io": self.io,
            "primitives": dict(self.primitives),
            "calls": dict(self.calls),
            "segments": self.segments,
            "outside_primitives": self.client - sum(self.primitives.values()),
        }


@dataclass
class CountedRepetition:
    """One connection's count: the groups from the first handshake mark to ``END``, in
    order, and the device's one-time setup apart."""

    groups: dict[str, CountedGroup]
    setup: CountedGroup
    boundaries: int  # segments in the counted span (each leaves the bookkeeping's residue)
    primitive_calls: int

    @property
    def invariant_instructions(self) -> int:
        return sum(g.client for g in self.groups.values())

    @property
    def wait_instructions(self) -> int:
        return sum(g.wait for g in self.groups.values())

    @property
    def io_instructions(self) -> int:
        return sum(g.io for g in self.groups.values())

    @property
    def with_network_wait_instructions(self) -> int:
        return self.invariant_instructions + self.wait_instructions

    def primitives(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for group in self.groups.values():
            for family, count in group.primitives.items():
                totals[family] = totals.get(family, 0) + count
        return totals

    def to_dict(self) -> dict[str, Any]:
        return {
            "invariant_instructions": self.invariant_instructions,
            "wait_instructions": self.wait_instructions,
            "io_instructions": self.io_instructions,
            "with_network_wait_instructions": self.with_network_wait_instructions,
            "primitives": self.primitives(),
            "groups": {name: g.to_dict() for name, g in self.groups.items()},
            "setup": self.setup.to_dict(),
            "boundaries": self.boundaries,
            "primitive_calls": self.primitive_calls,
        }


def segment_group(segment: Mapping[str, Any], version: str | None) -> str | None:
    """The group a segment opens: its mark, the group of the last handshake message its I/O
    completed, or None (it continues the group it falls in)."""
    if segment.get("event") == "m":
        return str(segment["mark"])
    messages = segment.get("messages") or ()
    if not messages:
        return None
    return message_group(segment["event"] == "w", int(messages[-1]), version or "1.3")


def classify_counted(
    segments: Sequence[Mapping[str, Any]], version: str | None
) -> CountedRepetition:
    """Group one connection's ledger segments (module docstring); ``version`` is the TLS
    version negotiated (None: plain MQTT)."""
    groups: dict[str, CountedGroup] = {}
    setup = CountedGroup()
    counting, current = False, None
    boundaries = calls = 0
    for segment in segments:
        opened = segment_group(segment, version)
        if opened == END_MARK:
            break
        if opened in HANDSHAKE_MARKS:
            counting = True
        if opened is not None:
            current = opened
        if current == SETUP_MARK and not counting:
            setup.add(segment)
        if not counting:
            continue
        groups.setdefault(str(current), CountedGroup()).add(segment)
        boundaries += 1
        calls += sum(int(count) for count in (segment.get("calls") or {}).values())
    return CountedRepetition(groups, setup, boundaries, calls)


def key_exchange_group(segments: Sequence[Mapping[str, Any]]) -> CountedGroup | None:
    """The payload scheme's key exchange as a group of its own (``KEY_EXCHANGE`` to
    ``KEY_EXCHANGE_END``: subscribing to its topics, the receiver's hello, the emitter's
    contribution, the confirmation), or None when the connection had none."""
    group, inside = None, False
    for segment in segments:
        mark = segment.get("mark") if segment.get("event") == "m" else None
        if mark == KEY_EXCHANGE_MARK:
            group, inside = CountedGroup(), True
        elif mark == KEY_EXCHANGE_END_MARK:
            inside = False
        if inside and group is not None:
            group.add(segment)
    return group


def replay(
    segments: Sequence[Mapping[str, Any]],
    arrivals: Sequence[tuple[int, int]],
    cycles_per_second: float,
) -> float:
    """Device seconds of the counted span (``CLIENT_HELLO``/``MQTT_CONNECT`` to ``END``) with
    the network: each segment's client instructions take ``client / cycles_per_second``
    (instructions per second at the clock, CPI applied by the caller); a read that needs
    received bytes up to offset *o* waits until they would have arrived. ``arrivals`` lists,
    per received chunk in order, (end offset of the received stream, delay in ns after the
    client's last bytes sent before it, as the bridge measured it)."""
    time_s = 0.0
    last_send_s = 0.0
    received = 0
    counting = False
    pending = list(arrivals)
    for segment in segments:
        mark = segment.get("mark") if segment.get("event") == "m" else None
        if mark == END_MARK:
            break
        if mark in HANDSHAKE_MARKS:
            counting = True
        event = segment.get("event")
        if counting and event == "r":
            received += int(segment.get("bytes", 0))
            while pending and pending[0][0] < received:
                pending.pop(0)
            if pending:
                time_s = max(time_s, last_send_s + pending[0][1] / 1e9)
        elif counting and event == "w":
            last_send_s = time_s
        if counting:
            time_s += int(segment.get("client", 0)) / cycles_per_second
    return time_s
