"""The agents' record vocabulary, declared once: every record type an agent writes (one JSON
object per line, ``agents.records``), its fields with their units, and the counters.

Everything that writes or reads records goes by this table: the Python agents' writer
checks each record type's fields against it (``RecordWriter``), the simulated executor
builds its records from it, ``runner.collect`` reads rows out of records by it (and
``runner.counted`` the device client's), and tests check the native C agent's and the device
client firmware's ``record(...)`` and ``counter(...)`` calls against it
(tests/test_record_vocabulary.py, as tests/test_import_map.py checks the import map). A new
field is added here first, then where it is written and read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from iotsecbench.security.tls import NegotiatedTls

MONOTONIC = "ns (monotonic)"  # time.monotonic_ns / CLOCK_MONOTONIC: one clock for the host
EMITTER, RECEIVER = "emitter", "receiver"
ROLES = (EMITTER, RECEIVER)  # the agents of a run (runner.collect reads both)
# The device client's firmware (vmcu/client, bare metal under QEMU; runner.counted reads it):
# it writes a few record types of its own shape, for the count, not for a run's tables.
DEVICE = "device"
NATIVE = "native"  # the native C agent (agents/native), translated for collect


@dataclass(frozen=True)
class Field:
    """One field of a record: its unit ("-" when it has none) and meaning; ``roles``: the
    agents that write it (a message record's fields differ between emitter and receiver)."""

    name: str
    unit: str
    meaning: str
    roles: tuple[str, ...] = ROLES


@dataclass(frozen=True)
class RecordType:
    """A record ``type``: what one line of it says, and its fields."""

    name: str
    meaning: str
    fields: tuple[Field, ...]
    only: str | None = None  # NATIVE or DEVICE: a type that program alone writes

    def names(self, role: str | None = None) -> tuple[str, ...]:
        """The fields (of ``role``'s records, when given)."""
        return tuple(f.name for f in self.fields if role is None or role in f.roles)


def _record(name: str, meaning: str, *fields: Field, only: str | None = None) -> RecordType:
    return RecordType(name, meaning, fields, only)


_E, _R, _D = (EMITTER,), (RECEIVER,), (DEVICE,)
# The device client's ledger buckets as its publish role reports them (publish.c)
_BUCKETS = (
    ("crypto", "client instructions inside the wrapped primitives"),
    ("protocol", "the rest of the client's instructions (MQTT, TLS framing, application)"),
    ("wait", "instructions polling the UART for bytes not yet there"),
    ("io", "instructions moving bytes through the emulated UART"),
)
# Their names, as the records carry them (the emitter's instructions_<bucket>)
DEVICE_BUCKETS = tuple(bucket for bucket, _ in _BUCKETS)
RECORD_TYPES: dict[str, RecordType] = {
    record.name: record
    for record in (
        _record(
            "sample",
            "the agent's counters every 100 ms (measure.Sample)",
            Field("t_ns", MONOTONIC, "when the sample was taken"),
            Field("cpu_ns", "ns (process CPU)", "cumulative CPU time of the agent process"),
            Field("rss_bytes", "bytes", "resident memory"),
            Field("tcp_bytes_sent", "bytes", "cumulative TCP payload bytes sent (TCP_INFO)"),
            Field("tcp_bytes_acked", "bytes", "cumulative TCP bytes acknowledged"),
            Field("tcp_bytes_received", "bytes", "cumulative TCP payload bytes received"),
            Field("tcp_segs_out", "segments", "cumulative TCP segments sent"),
            Field("tcp_segs_in", "segments", "cumulative TCP segments received"),
            Field("tcp_retrans", "segments", "cumulative TCP retransmissions"),
            # The device emitter's (run --target, runner/device_emitter.py): cumulative counts
            # of the firmware's ledger, and the firmware's own sample record (publish.c).
            *(
                Field(f"instructions_{bucket}", "instructions", f"cumulative {meaning}", _E)
                for bucket, meaning in _BUCKETS
            ),
            Field(
                "sleep_ns", "ns", "cumulative time the device slept between messages", (*_E, *_D)
            ),
            *(
                Field(bucket, "instructions", f"cumulative {meaning}", _D)
                for bucket, meaning in _BUCKETS
            ),
            Field(
                "instructions_families",
                "instructions",
                "cumulative crypto per primitive family ({family: count}): an accelerator's share",
                _E,
            ),
            Field("families", "instructions", "cumulative crypto per primitive family", _D),
            Field("heap_bytes", "bytes", "the device's heap in use", _D),
            Field("heap_peak_bytes", "bytes", "its peak since publishing began", _D),
        ),
        _record(
            "message",
            "one message: sealed and published (emitter), arrived and delivered (receiver)",
            Field("seq", "-", "sequence number, from 0"),
            Field("payload_bytes", "bytes", "application payload size", _E),
            Field("wire_bytes", "bytes", "the payload after sealing (MQTT payload or frame)"),
            Field(
                "t_created_ns",
                MONOTONIC,
                "payload created, before sealing (the receiver: as carried inside the payload)",
            ),
            Field("t_sealed_ns", MONOTONIC, "payload sealed", _E),
            Field("t_published_ns", MONOTONIC, "handed to MQTT or the socket", _E),
            Field("seal_cpu_ns", "ns (thread CPU)", "CPU time spent sealing", _E),
            Field("t_arrived_ns", MONOTONIC, "arrived, before opening", _R),
            Field("t_delivered_ns", MONOTONIC, "opened, verified and delivered", _R),
            Field("open_cpu_ns", "ns (thread CPU)", "CPU time spent opening", _R),
            Field("dup_flag", "bool", "MQTT DUP flag of the delivered copy", _R),
            # The device emitter's (run --target): the message's counted instructions, from
            # its creation to its PUBLISH written (QoS 1: its PUBACK read), and the firmware's
            *(
                Field(f"instructions_{bucket}", "instructions", meaning, _E)
                for bucket, meaning in (*_BUCKETS, ("seal", "the payload scheme's seal"))
            ),
            *(Field(bucket, "instructions", meaning, _D) for bucket, meaning in _BUCKETS),
            Field("seal", "instructions", "the payload scheme's seal", _D),
            Field("packet_bytes", "bytes", "the whole PUBLISH packet (tcp role: frame)", _D),
            *(
                Field(name, MONOTONIC, "as the emitter's", _D)
                for name in ("t_created_ns", "t_sealed_ns", "t_published_ns")
            ),
            *(
                Field(name, "-", "as the emitter's", _D)
                for name in ("seq", "payload_bytes", "wire_bytes")
            ),
        ),
        _record(
            "echo",
            "one block the tcp transport's receiver returned (method 'echo'), at the emitter",
            Field("seq", "-", "the block's sequence number", _E),
            Field("t_sent_ns", MONOTONIC, "the block created and sent", _E),
            Field("t_returned_ns", MONOTONIC, "its echo read back", _E),
            Field("t_opened_ns", MONOTONIC, "its echo opened and verified", _E),
            Field("open_cpu_ns", "ns (thread CPU)", "CPU time spent opening the echo", _E),
            Field("wire_bytes", "bytes", "the echo's frame, length header included", (*_E, *_D)),
            # The device emitter's (run --target over tcp, vmcu/client/frames.c): opening the
            # echo counted, and the firmware's own record of it
            Field("instructions_open", "instructions", "the payload scheme's open", _E),
            *(
                Field(name, unit, "as the emitter's", _D)
                for name, unit in (
                    ("seq", "-"),
                    ("t_sent_ns", MONOTONIC),
                    ("t_returned_ns", MONOTONIC),
                    ("t_opened_ns", MONOTONIC),
                )
            ),
            Field("open", "instructions", "the payload scheme's open", _D),
        ),
        _record(
            "handshake",
            "one connection set-up phase: tcp_connect, tls_handshake, mqtt_connect, key_exchange",
            Field("phase", "-", "the phase's name"),
            Field("t_start_ns", MONOTONIC, "phase start"),
            Field("t_end_ns", MONOTONIC, "phase end"),
            Field("wall_ns", "ns", "t_end_ns - t_start_ns"),
            Field("cpu_ns", "ns (thread CPU)", "CPU time the agent spent in the phase"),
            Field("detail", "JSON object", "what the phase adds, e.g. TCP bytes, negotiated"),
        ),
        _record(
            "operation",
            "a cryptographic or protocol operation, priced by the energy model",
            Field("t_ns", MONOTONIC, "when it was performed"),
            Field("primitive", "-", "energy vocabulary name (energy/vocabulary.py)"),
            Field("amount", "bytes or count", "bytes for bulk primitives, else operations"),
        ),
        _record(
            "event",
            "a lifecycle event (agent_start, connected, publish_start, tls_wire, …)",
            Field("t_ns", MONOTONIC, "when it happened"),
            Field("kind", "-", "the event's name"),
            Field("detail", "JSON object", "what the event adds"),
            # The device client's events (it has no host clock): agent_start, agent_end.
            Field("name", "-", "the device's event: agent_start or agent_end", _D),
            Field("status", "-", "agent_end: 'ok' or 'failed'", _D),
            Field("role", "-", "agent_start: the device's role (connect, publish)", _D),
            Field("stack", "-", "agent_start: its TLS library (mbedtls, wolfssl, none)", _D),
            Field("stack_version", "-", "agent_start: that library's version", _D),
            Field(
                "residue_per_boundary",
                "instructions",
                "agent_start: the ledger's own instructions left in a segment's count",
                _D,
            ),
            Field(
                "residue_per_primitive_call",
                "instructions",
                "agent_start: the wrappers' own instructions left per primitive call",
                _D,
            ),
            # the emitter roles' (publish.c, frames.c): publish_start, publish_end, key_exchange
            Field("messages", "messages", "publish_start: messages to send (0: saturating)", _D),
            Field("saturating", "bool", "publish_start (tcp role): as fast as it can", _D),
            Field("method", "-", "publish_start (tcp role): unidirectional or echo", _D),
            Field("sent", "messages", "publish_end: messages sent", _D),
            Field("t_start_ns", MONOTONIC, "key_exchange: the receiver's hello arrived", _D),
            Field("t_end_ns", MONOTONIC, "key_exchange: its confirmation verified", _D),
            Field("bytes_out", "bytes", "key_exchange: the emitter's message", _D),
            Field("bytes_in", "bytes", "key_exchange: the receiver's two messages", _D),
            *(
                Field(bucket, "instructions", f"key_exchange: {meaning}", _D)
                for bucket, meaning in _BUCKETS
            ),
            Field("mlkem", "instructions", "key_exchange: of its crypto, inside ML-KEM", _D),
        ),
        _record(
            "counters",
            "one named count at the end of the run (COUNTERS)",
            Field("name", "-", "a COUNTERS name"),
            Field("value", "COUNTERS unit", "its value"),
        ),
        _record(
            "negotiated",
            "what the emitter's TLS connection negotiated (security.tls.NegotiatedTls)",
            *(
                Field(name, "-", "security.tls.NegotiatedTls.to_dict()", _E)
                for name in (
                    *(f.name for f in dataclasses.fields(NegotiatedTls)),
                    "handshake_message_count_sent",
                    "handshake_message_count_received",
                    "handshake_bytes_sent",
                    "handshake_bytes_received",
                )
            ),
        ),
        _record(
            "error",
            "why the agent failed (the run fails with it)",
            Field("t_ns", MONOTONIC, "when"),
            Field("message", "-", "one line"),
        ),
        _record(
            "tls_transcript",
            "the native agent's or the device client's TLS session as its stack reports it",
            Field("t_ns", MONOTONIC, "when the handshake completed"),
            Field("stack", "-", "the TLS library: mbedtls or wolfssl"),
            Field("stack_version", "-", "its version"),
            Field("version", "-", "negotiated TLS version, '1.2' or '1.3'"),
            Field("suite", "-", "IANA cipher suite number"),
            Field("suite_name", "-", "the stack's name of the suite"),
            Field("cipher_bits", "bits", "secret bits of the bulk cipher"),
            Field("resumed", "bool", "an abbreviated or PSK handshake"),
        ),
        _record(
            "tls_message",
            "one handshake message as it crossed the wire (a protected record by its size)",
            Field("written", "bool", "the agent wrote it (else read it)"),
            Field("message_type", "-", "TLS HandshakeType, 0 for a protected record"),
            Field("bytes", "bytes", "its length with the 4-byte header"),
            Field("hex", "hex", "the message itself ('' for a protected record)"),
            only=NATIVE,
        ),
        _record(
            "tls_peer_certificate",
            "one certificate of the server's chain",
            Field("position", "-", "0 is the leaf"),
            Field("der_hex", "hex", "the DER certificate"),
            only=NATIVE,
        ),
        _record(
            "count_segment",
            "one ledger segment of the device client: the instructions between two boundaries "
            "(a mark, a read or a write), by bucket (analysis.counted; docs/device-client.md)",
            Field("index", "-", "the segment's position, from 0", _D),
            Field("event", "-", "what opened it: 'm' a mark, 'r' a read, 'w' a write", _D),
            Field("mark", "-", "the mark's name (event 'm'), e.g. CLIENT_HELLO", _D),
            Field("bytes", "bytes", "bytes read or written (events 'r' and 'w')", _D),
            Field("client", "instructions", "the device's own work: network-invariant", _D),
            Field("wait", "instructions", "polling for bytes not yet there", _D),
            Field("io", "instructions", "moving bytes through the emulated UART", _D),
            Field("primitives", "JSON object", "of client, instructions per primitive family", _D),
            Field("calls", "JSON object", "primitive calls per family", _D),
            only=DEVICE,
        ),
    )
}

# Counter names (records of type `counters`), their units and meanings; `forged_<kind>` are
# the test suite's attacker's (agents/attacker.py).
COUNTERS: dict[str, tuple[str, str]] = {
    "messages_sent": ("messages", "messages the emitter sent"),
    "messages_received": ("messages", "messages the receiver got"),
    "messages_delivered": ("messages", "messages that passed the scheme's checks"),
    "duplicates": ("messages", "extra copies received"),
    "auth_failures": ("messages", "rejected: tag, MAC or key mismatch"),
    "malformed": ("messages", "rejected: too short or bad framing"),
    "replays_rejected": ("messages", "rejected by the replay window"),
    "peak_rss_bytes": ("bytes", "peak resident memory of the agent"),
    "tls_heap_handshake_peak_bytes": ("bytes", "TLS stack heap peak up to the handshake's end"),
    "tls_heap_steady_bytes": ("bytes", "TLS stack heap held after set-up"),
    "tls_heap_publishing_peak_bytes": ("bytes", "TLS stack heap peak while publishing"),
    "tls_heap_allocations": ("allocations", "TLS stack heap allocations"),
    "footprint_text_bytes": ("bytes", "the native program's text (size)"),
    "footprint_data_bytes": ("bytes", "its initialised data"),
    "footprint_bss_bytes": ("bytes", "its zero-initialised data"),
    # The fleet agent's (agents/native/fleet_link.c), with a reconnect storm (storm_at_s).
    "link_cuts": ("cuts", "times the emitter's connection was cut and reconnected"),
    # The device client's (vmcu/client/main.c), at the connection's end.
    "stack_high_water_bytes": ("bytes", "device: most stack the firmware used"),
    "tls_heap_setup_peak_bytes": ("bytes", "device: TLS stack heap peak before the handshake"),
    "stream_bytes_sent": ("bytes", "device: bytes its UART stream sent (TLS records included)"),
    "stream_bytes_received": ("bytes", "device: bytes its UART stream received"),
    # The publish role's payload key exchange (vmcu/client/publish.c): its own memory peaks.
    "key_exchange_stack_high_water_bytes": ("bytes", "device: most stack the key exchange used"),
    "key_exchange_heap_peak_bytes": ("bytes", "device: heap peak during the key exchange"),
}
FORGED_PREFIX = "forged_"

# Each record type's field names and `type` itself, for the checks below (built once).
_NAMES = {name: frozenset((*record.names(), "type")) for name, record in RECORD_TYPES.items()}


def fields_of(record_type: str, role: str | None = None) -> tuple[str, ...]:
    """The declared fields of ``record_type`` (written by ``role``, when given)."""
    return RECORD_TYPES[record_type].names(role)


def shared_fields(record_type: str) -> tuple[str, ...]:
    """The fields every agent writes in ``record_type`` (a sample's measured columns: what the
    samples table stores; the device emitter's counts come on top, for runner.collect)."""
    return tuple(f.name for f in RECORD_TYPES[record_type].fields if set(ROLES) <= set(f.roles))


def undeclared(record_type: str, names: Iterable[str]) -> list[str]:
    """What is not in the vocabulary about a record of ``record_type`` with fields ``names``
    (``type`` itself may be among them): an unknown type, unknown fields (empty when all is
    declared)."""
    declared = _NAMES.get(record_type)
    if declared is None:
        return [f"record type {record_type!r}"]
    return [f"{record_type}.{name}" for name in names if name not in declared]


def counter_declared(name: str) -> bool:
    return name in COUNTERS or name.startswith(FORGED_PREFIX)


def check(record_type: str, fields: Mapping[str, Any] | Iterable[str]) -> None:
    """ValueError unless a record of ``record_type`` with these fields (a record's mapping, or
    its field names) is declared; a ``counters`` record's name too."""
    declared = _NAMES.get(record_type)
    if declared is not None and declared.issuperset(fields) and record_type != "counters":
        return  # the common case, at the cost of one set comparison (records are hot)
    problems = undeclared(record_type, fields)
    if record_type == "counters" and isinstance(fields, Mapping):
        name = str(fields.get("name"))
        if not counter_declared(name):
            problems.append(f"counter {name!r}")
    if problems:
        raise ValueError(f"not in the record vocabulary (agents/vocabulary.py): {problems}")
