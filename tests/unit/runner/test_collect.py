"""Turning agent records into table rows: joins, losses, crash leftovers, modelled current."""

from __future__ import annotations

from iotsecbench.energy.profile import load_profile
from iotsecbench.runner.collect import collect

DEVICE = load_profile("esp32-wroom-32")


def _sample(t_ns: int, sent: int = 0) -> dict:
    return {
        "type": "sample",
        "t_ns": t_ns,
        "cpu_ns": t_ns // 100,
        "rss_bytes": 1 << 25,
        "tcp_bytes_sent": sent,
        "tcp_bytes_acked": sent,
        "tcp_bytes_received": 0,
        "tcp_segs_out": sent // 100,
        "tcp_segs_in": 0,
        "tcp_retrans": 0,
    }


def _sent(seq: int) -> dict:
    return {
        "type": "message",
        "seq": seq,
        "payload_bytes": 64,
        "wire_bytes": 90,
        "t_created_ns": 1000 + seq,
        "t_sealed_ns": 1100 + seq,
        "t_published_ns": 1200 + seq,
        "seal_cpu_ns": 50,
    }


def _received(seq: int) -> dict:
    return {
        "type": "message",
        "seq": seq,
        "wire_bytes": 90,
        "t_created_ns": 1000 + seq,
        "t_arrived_ns": 5000 + seq,
        "t_delivered_ns": 5100 + seq,
        "open_cpu_ns": 40,
    }


def test_messages_join_on_seq_and_missing_ones_are_lost() -> None:
    records = {
        "emitter": [
            _sent(0),
            _sent(1),
            _sent(2),
            {"type": "counters", "name": "messages_sent", "value": 3},
        ],
        "receiver": [
            _received(0),
            _received(2),
            {"type": "counters", "name": "auth_failures", "value": 1},
        ],
    }
    facts, tables = collect("r1", records, 64, DEVICE)
    by_seq = {row["seq"]: row for row in tables["messages"]}
    assert by_seq[1]["status"] == "lost" and by_seq[1]["t_delivered_ns"] is None
    assert by_seq[2]["status"] == "delivered" and by_seq[2]["t_delivered_ns"] == 5102
    assert (facts["messages_sent"], facts["messages_delivered"], facts["messages_lost"]) == (
        3,
        2,
        1,
    )
    assert facts["auth_failures"] == 1


def test_a_delivery_without_its_emitter_record_is_kept() -> None:
    """The emitter crashed after publishing but before its record reached the disk."""
    _facts, tables = collect("r1", {"emitter": [], "receiver": [_received(7)]}, 64, DEVICE)
    assert [(row["seq"], row["status"]) for row in tables["messages"]] == [(7, "delivered")]


def test_samples_get_a_modelled_current_and_the_time_origin_is_the_first_sample() -> None:
    samples = [_sample(t * 100_000_000, sent=t * 300) for t in range(1, 21)]
    operations = [
        {"type": "operation", "t_ns": 500_000_000, "primitive": "ecdh-p256-keygen", "amount": 1}
    ]
    facts, tables = collect("r1", {"emitter": samples + operations, "receiver": []}, 64, DEVICE)
    currents = [row["current_ma"] for row in tables["samples"]]
    assert len(currents) == 20 and all(c > 0 for c in currents)
    # The 266 ms ECDH keygen raises the modelled current in the windows right after it.
    assert max(currents[4:8]) > currents[-1]
    assert facts["t0_ns"] == 100_000_000
    assert facts["energy_model_version"]
    assert facts["unmodelled_primitives"] == []


def test_unknown_primitives_are_reported_not_silently_free() -> None:
    records = {
        "emitter": [
            _sample(100_000_000),
            _sample(200_000_000),
            {"type": "operation", "t_ns": 150_000_000, "primitive": "frodo640-decaps", "amount": 1},
        ]
    }
    facts, _ = collect("r1", records, 64, DEVICE)
    assert facts["unmodelled_primitives"] == ["frodo640-decaps"]
