"""A device client's connection made whole (the device's ``agents.native.translate``): its
ledger segments joined with the bytes that crossed the bridge, so that

* each read and write knows the handshake messages it completed (``security.tls.wire``: the
  streams split into records, TLS 1.3's opened with the connection's secrets), and the
  segments fall into the ``iotst`` classification groups (``analysis.counted``);
* what was negotiated is read from the wire with the parser of every other stack
  (``negotiated_on_the_wire``) and checked against the profile (``verify_negotiated``): a
  mismatch fails the run, as for the native agent;
* the bridge's times give the connection's wall time (its TCP connect, not counted, to the
  CONNACK's arrival) and each received byte's delay after the client's last send (the
  device-time replay's network).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from iotsecbench.agents import vocabulary
from iotsecbench.analysis.counted import HANDSHAKE_MARKS, CountedRepetition, classify_counted
from iotsecbench.runner.device import DeviceRun
from iotsecbench.security.tls import TlsProfile, verify_negotiated
from iotsecbench.security.tls.observe import NegotiatedTls, negotiated_on_the_wire
from iotsecbench.security.tls.stacks import suite_name
from iotsecbench.security.tls.wire import (
    APPLICATION_DATA,
    FINISHED,
    HANDSHAKE,
    WireError,
    WireTranscript,
    on_the_wire_messages,
    read_transcript,
)

PLAIN_CONNACK_BYTES = 4  # MQTT 3.1.1 §3.2: fixed header and two bytes


class CountedMismatch(ValueError):
    """The device negotiated something other than its profile asks for."""


@dataclass
class CountedConnection:
    """One counted connection, ready for statistics and the store."""

    counted: CountedRepetition
    segments: list[dict[str, Any]]  # the ledger's, each read/write with "messages" added
    negotiated: dict[str, Any] | None  # None for plain MQTT
    tls: NegotiatedTls | None  # the same, as the parser found it
    counters: dict[str, int]
    t_start_ns: int  # the bridge's TCP connect began
    tcp_connect_ns: int  # its duration: QEMU's and the bridge's, not counted
    t_connack_ns: int  # the CONNACK's last byte reached the bridge
    arrivals: list[tuple[int, int]] = field(default_factory=list)  # see analysis.counted.replay
    tcp: dict[str, int] = field(default_factory=dict)  # the broker connection's TCP_INFO deltas
    residue: dict[str, int] = field(default_factory=dict)  # the ledger's bookkeeping residue
    qemu_wall_ns: int = 0  # QEMU's whole run, start-up to exit
    emulated_instructions: int = 0  # every counted bucket of every segment: what QEMU ran

    @property
    def instructions_per_s(self) -> float:
        """How fast QEMU ran the firmware (start-up, bridge and waits included)."""
        return self.emulated_instructions / (self.qemu_wall_ns / 1e9) if self.qemu_wall_ns else 0.0

    @property
    def wall_ns(self) -> int:
        return self.t_connack_ns - self.t_start_ns


def cipher_bits(suite: str) -> int:
    """The bulk cipher's key bits from an OpenSSL suite name."""
    upper = suite.upper().replace("_", "")
    return 128 if "AES128" in upper else 256 if ("AES256" in upper or "CHACHA20" in upper) else 0


def _messages(transcript: WireTranscript, written: bool, start: int, end: int) -> list[int]:
    """Handshake messages completed by the records of one direction ending in (start, end]; a
    TLS 1.2 protected handshake record is its Finished (the only one before application data)."""
    found: list[int] = []
    for record in transcript.records_ending(written, start, end):
        found += list(record.messages)
        if record.inner_type is None and record.content_type == HANDSHAKE:
            found.append(FINISHED)
    return found


def _annotated(
    segments: list[dict[str, Any]], transcript: WireTranscript | None
) -> list[dict[str, Any]]:
    """The segments with the messages each read or write completed."""
    offsets = {True: 0, False: 0}
    annotated = []
    for segment in segments:
        segment = dict(segment)
        if segment.get("event") in ("r", "w"):
            written = segment["event"] == "w"
            start = offsets[written]
            offsets[written] += int(segment.get("bytes", 0))
            if transcript is not None:
                segment["messages"] = _messages(transcript, written, start, offsets[written])
        annotated.append(segment)
    return annotated


def _handshake_order(segments: list[dict[str, Any]]) -> list[tuple[bool, int]]:
    """The client's I/O during the TLS handshake: (written, the direction's offset after it)."""
    offsets = {True: 0, False: 0}
    order, inside = [], False
    for segment in segments:
        if segment.get("event") == "m":
            inside = segment.get("mark") == "CLIENT_HELLO"
            continue
        written = segment["event"] == "w"
        offsets[written] += int(segment.get("bytes", 0))
        if inside:
            order.append((written, offsets[written]))
    return order


def _connack_offset(transcript: WireTranscript | None, version: str | None) -> int:
    """The received stream's offset after the record that carried the CONNACK: the server's
    first application data (TLS 1.3: opened as such; its tickets come first)."""
    if transcript is None:
        return PLAIN_CONNACK_BYTES
    for record in transcript.records:
        if record.written or record.content_type != APPLICATION_DATA:
            continue
        if version == "1.2" or record.inner_type == APPLICATION_DATA:
            return record.end_offset
    raise WireError("no application data from the broker: the CONNACK never came")


def _arrivals(run: DeviceRun) -> list[tuple[int, int]]:
    """(received stream's end offset, ns after the last send) per chunk from the broker."""
    arrivals, received, last_sent = [], 0, None
    for chunk in run.chunks:
        if chunk.written:
            last_sent = chunk.t_ns
            continue
        received += chunk.size
        base = last_sent if last_sent is not None else run.tcp_connect_ns[1]
        arrivals.append((received, max(0, chunk.t_ns - base)))
    return arrivals


def _tcp(run: DeviceRun) -> dict[str, int]:
    before, after = run.tcp_before, run.tcp_after
    if before is None or after is None:
        return {}
    return {
        "tcp_bytes_sent": after.bytes_sent - before.bytes_sent,
        "tcp_bytes_received": after.bytes_received - before.bytes_received,
        "tcp_segments_out": after.segs_out - before.segs_out,
        "tcp_segments_in": after.segs_in - before.segs_in,
        "tcp_retransmissions": after.total_retrans - before.total_retrans,
        "tcp_mss": after.snd_mss_bytes,
    }


def _checked(run: DeviceRun) -> None:
    for record in (*run.outcome.records, *run.outcome.segments):  # a field nobody declared: a bug
        vocabulary.check(str(record.get("type", "?")), record)


def counted_frames(run: DeviceRun) -> CountedRepetition:
    """The count of the tcp role's connection (vmcu/client/frames.c), which has no TLS and no
    MQTT to read on the wire: its payload scheme's key exchange, marked KEY_EXCHANGE to END,
    is the handshake's one group."""
    _checked(run)
    return classify_counted(run.outcome.segments, None)


def counted_connection(run: DeviceRun, profile: TlsProfile | None) -> CountedConnection:
    """The run made whole (module docstring). CountedMismatch when it negotiated something
    else than ``profile``; WireError when the streams cannot be read as its connection."""
    outcome = run.outcome
    _checked(run)
    summary = outcome.transcript()
    transcript, negotiated, version, found = None, None, None, None
    if profile is not None:
        if summary is None:
            raise WireError("the device client wrote no TLS summary")
        version = str(summary["version"])
        suite = suite_name(int(summary["suite"]))
        transcript = read_transcript(run.sent, run.received, version, suite, outcome.secrets)
    segments = _annotated(outcome.segments, transcript)
    if profile is not None and transcript is not None and version is not None:
        messages = on_the_wire_messages(transcript, _handshake_order(segments))
        found = negotiated_on_the_wire(version, suite, cipher_bits(suite), False, messages, [])
        try:
            verify_negotiated(profile, found, expect_resumed=False)
        except ValueError as error:
            raise CountedMismatch(f"{profile.name}: {error}") from None
        negotiated = found.to_dict()
    start = run.tcp_connect_ns[0]
    connack = run.arrival_ns(False, _connack_offset(transcript, version))
    started = outcome.event("agent_start")
    return CountedConnection(
        counted=classify_counted(segments, version),
        segments=segments,
        negotiated=negotiated,
        tls=found,
        counters=outcome.counters(),
        t_start_ns=start,
        tcp_connect_ns=run.tcp_connect_ns[1] - start,
        t_connack_ns=connack if connack is not None else start,
        arrivals=_arrivals(run),
        tcp=_tcp(run),
        residue={
            "per_boundary": int(started.get("residue_per_boundary", 0)),
            "per_primitive_call": int(started.get("residue_per_primitive_call", 0)),
        },
        qemu_wall_ns=run.qemu_wall_ns,
        emulated_instructions=sum(
            int(s.get(bucket, 0)) for s in outcome.segments for bucket in ("client", "wait", "io")
        ),
    )


__all__ = [
    "HANDSHAKE_MARKS",
    "CountedConnection",
    "CountedMismatch",
    "counted_connection",
    "counted_frames",
]
