"""A native agent's records made whole: what the Python agents write themselves but the C
agent leaves to this side, computed with the very functions the Python agents use, so both
kinds of run reach the store in one vocabulary.

* ``negotiated`` — from the agent's ``tls_transcript``, ``tls_message`` and
  ``tls_peer_certificate`` records, read by the OpenSSL transcripts' parser
  (``negotiated_on_the_wire``) and checked against the profile (``verify_negotiated``); a
  mismatch fails the run, as a Python agent's check does.
* ``operation`` — the energy model's inputs: MQTT packets per connection and message (none
  over the tcp transport), the TLS handshake's public-key operations and each record's
  protection (``handshake_operations``, ``record_operations``; over tcp a record per frame),
  the payload scheme's key exchange (``exchange_operations``) and each message's sealing or
  opening (``seal_operations``, ``open_operations``; an echo's opening too), at the instants
  the records give — as agents/emitter.py, agents/receiver.py and agents/tcp.py log them.
* ``counters`` — the program's static footprint (``size``), which only the runner knows.
"""

from __future__ import annotations

from typing import Any

from iotsecbench.agents import wire
from iotsecbench.agents.config import AgentConfig
from iotsecbench.agents.native import Footprint
from iotsecbench.security import resolve_configuration
from iotsecbench.security.key_establishment import exchange_operations
from iotsecbench.security.tls import (
    TlsProfile,
    handshake_operations,
    record_operations,
    verify_negotiated,
)
from iotsecbench.security.tls.observe import (
    PROTECTED_RECORD,
    NegotiatedTls,
    negotiated_on_the_wire,
)
from iotsecbench.security.tls.stacks import suite_bits, suite_name


def negotiated(records: list[dict[str, Any]]) -> NegotiatedTls | None:
    """What the agent's TLS connection negotiated, or None for plain MQTT (or an agent that
    died before its handshake was written down)."""
    summary = next((r for r in records if r.get("type") == "tls_transcript"), None)
    if summary is None:
        return None
    messages = [
        (
            bool(r["written"]),
            int(r["message_type"]),
            int(r["bytes"]) if r["message_type"] == PROTECTED_RECORD else bytes.fromhex(r["hex"]),
        )
        for r in records
        if r.get("type") == "tls_message"
    ]
    chain = [
        bytes.fromhex(r["der_hex"])
        for r in sorted(
            (r for r in records if r.get("type") == "tls_peer_certificate"),
            key=lambda r: r["position"],
        )
    ]
    suite = int(summary["suite"])
    return negotiated_on_the_wire(
        summary["version"],
        suite_name(suite),
        int(summary["cipher_bits"]) or suite_bits(suite),  # 0: the stack cannot say
        bool(summary["resumed"]),
        messages,
        chain,
    )


def _operation(t_ns: int, primitive: str, amount: int) -> dict[str, Any]:
    return {"type": "operation", "t_ns": t_ns, "primitive": primitive, "amount": amount}


def complete(
    records: list[dict[str, Any]], config: AgentConfig, footprint: Footprint | None
) -> tuple[list[dict[str, Any]], str | None]:
    """The agent's records with what the runner adds (module docstring), and the reason the
    negotiated TLS differs from the profile (None when it matches or there is no TLS).
    ``footprint`` None: the fleet agent's, whose program is no device's footprint."""
    added: list[dict[str, Any]] = (
        [
            {"type": "counters", "name": "footprint_text_bytes", "value": footprint.text_bytes},
            {"type": "counters", "name": "footprint_data_bytes", "value": footprint.data_bytes},
            {"type": "counters", "name": "footprint_bss_bytes", "value": footprint.bss_bytes},
        ]
        if footprint is not None
        else []
    )
    phases = {r["phase"]: r for r in records if r.get("type") == "handshake"}
    mqtt = config.transport == "mqtt"
    if "mqtt_connect" in phases:  # CONNECT + CONNACK
        added.append(_operation(phases["mqtt_connect"]["t_start_ns"], "mqtt-packet", 2))
    problem = None
    tls = negotiated(records) if config.tls is not None else None
    if tls is not None and config.tls is not None:
        profile = TlsProfile(**config.expected_tls_profile())
        added.append({"type": "negotiated", **tls.to_dict()})
        try:
            verify_negotiated(profile, tls, expect_resumed=profile.resumption)
        except ValueError as error:
            problem = f"TLS negotiated something else than requested: {error}"
        t_connected = phases.get("mqtt_connect", phases.get("tls_handshake", {})).get("t_end_ns", 0)
        added += [
            _operation(t_connected, primitive, amount)
            for primitive, amount in handshake_operations(tls, profile.certificate)
        ]
    data_topic = f"{config.topic_prefix}/data"
    per_message = 2 if config.qos else 1  # PUBLISH (+ PUBACK)
    if config.role == "receiver":
        subscribed = phases.get("mqtt_connect", {}).get("t_end_ns")
        if subscribed is not None:
            added.append(_operation(subscribed, "mqtt-packet", 2))  # SUBSCRIBE + SUBACK
    scheme = resolve_configuration(config.configuration).scheme
    if "key_exchange" in phases and scheme.key_establishment:
        t_start = phases["key_exchange"]["t_start_ns"]
        role = "emitter" if config.role == "emitter" else "receiver"
        added += [_operation(t_start, p, a) for p, a in exchange_operations(scheme.name)[role]]
        if mqtt:  # hello, answer, confirmation and their PUBACKs; the emitter's SUBSCRIBE + SUBACK
            added.append(_operation(t_start, "mqtt-packet", 6 if role == "emitter" else 4))
    for message in (r for r in records if r.get("type") == "message"):
        sealed = "t_sealed_ns" in message
        t_ns = message["t_sealed_ns"] if sealed else message.get("t_arrived_ns", 0)
        if mqtt:
            added.append(_operation(t_ns, "mqtt-packet", per_message))
        crypto = (
            scheme.seal_operations(config.payload_bytes)
            if sealed
            else scheme.open_operations(config.payload_bytes)
        )
        added += [
            _operation(message.get("t_created_ns", t_ns) if sealed else t_ns, p, a)
            for p, a in crypto
        ]
        if tls is not None:
            wire_bytes = int(message["wire_bytes"])  # over tcp: the whole frame
            packet = (
                wire.publish_packet_bytes(data_topic, config.qos, wire_bytes)
                if mqtt
                else wire_bytes
            )
            added += [_operation(t_ns, p, a) for p, a in record_operations(tls, packet)]
    opening = scheme.open_operations(config.payload_bytes)
    for echo in (r for r in records if r.get("type") == "echo"):
        added += [_operation(echo["t_returned_ns"], p, a) for p, a in opening]
    return records + added, problem
