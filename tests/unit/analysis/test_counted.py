"""analysis.counted: a device connection's ledger segments grouped as the iotst trace method
groups a host's (known truth: hand-made segments), and the device-time replay (analytic)."""

from __future__ import annotations

import pytest

from iotsecbench.analysis.counted import classify_counted, replay


def mark(name: str, client: int = 0) -> dict:
    return {"event": "m", "mark": name, "client": client, "wait": 0, "io": 0}


def io(event: str, size: int, client: int, messages=(), wait: int = 0, **families) -> dict:
    """A read or write segment; families as pk=(instructions, calls)."""
    return {"event": event, "bytes": size, "client": client, "wait": wait, "io": 5,
            "messages": list(messages),
            "primitives": {name: value[0] for name, value in families.items()},
            "calls": {name: value[1] for name, value in families.items()}}  # fmt: skip


TLS13 = [
    mark("BOOT", 30),
    mark("SETUP", 1000),  # the device's one-time set-up: apart
    mark("CLIENT_HELLO", 500),
    io("w", 200, 10, [1], wait=9000),  # ClientHello sent: waiting for the server's flight
    io("r", 5, 3),  # a record header completes nothing: the group goes on
    io("r", 100, 700, [2], pk=(600, 2)),  # ServerHello: key derivation
    io("r", 5, 3, wait=50),
    io("r", 900, 4000, [11], pk=(3500, 3)),  # Certificate: the chain
    io("r", 5, 3),
    io("r", 80, 3000, [15], pk=(2900, 1)),  # CertificateVerify
    io("r", 5, 3),
    io("r", 60, 200, [20], sha2=(150, 4)),  # Finished: verify, then our own
    io("w", 60, 20, [20]),  # our Finished sent
    mark("MQTT_CONNECT", 100),
    io("w", 40, 5, wait=7000),
    io("r", 5, 3),
    io("r", 30, 60, []),  # the CONNACK in application data
    mark("END", 1),  # not counted, nor anything after it
    io("w", 30, 999),
]


def test_groups_follow_the_messages_as_the_trace_markers_do():
    counted = classify_counted(TLS13, "1.3")
    assert list(counted.groups) == [
        "CLIENT_HELLO", "WAIT_SERVER_FLIGHT", "KEY_DERIVE", "CERT_CHAIN", "CERT_VERIFY",
        "FINISHED", "TLS_DONE", "MQTT_CONNECT",
    ]  # fmt: skip
    groups = counted.groups
    assert groups["WAIT_SERVER_FLIGHT"].client == 10 + 3  # the header read continues it
    assert groups["WAIT_SERVER_FLIGHT"].wait == 9000
    assert groups["KEY_DERIVE"].client == 700 + 3 and groups["KEY_DERIVE"].wait == 50
    assert groups["CERT_CHAIN"].primitives == {"pk": 3500}
    assert groups["CERT_CHAIN"].calls == {"pk": 3}
    assert groups["MQTT_CONNECT"].client == 100 + 5 + 3 + 60
    assert counted.setup.client == 1000
    invariant = 500 + 10 + 3 + 700 + 3 + 4000 + 3 + 3000 + 3 + 200 + 20 + 100 + 5 + 3 + 60
    assert counted.invariant_instructions == invariant
    assert counted.wait_instructions == 9000 + 50 + 7000
    assert counted.with_network_wait_instructions == invariant + 16050
    assert counted.primitives() == {"pk": 7000, "sha2": 150}
    assert counted.boundaries == 15 and counted.primitive_calls == 10


def test_plain_mqtt_counts_from_the_connect():
    segments = [mark("SETUP", 7), mark("MQTT_CONNECT", 90), io("w", 60, 4), io("r", 2, 3),
                io("r", 2, 5), mark("END")]  # fmt: skip
    counted = classify_counted(segments, None)
    assert list(counted.groups) == ["MQTT_CONNECT"]
    assert counted.invariant_instructions == 102


def test_tls12_names_its_groups_by_version():
    segments = [mark("CLIENT_HELLO", 1), io("w", 100, 1, [1]), io("r", 80, 2, [2]),
                io("r", 50, 3, [14]), io("w", 70, 4, [16]), io("w", 50, 5, [20]),
                io("r", 40, 6, [20]), mark("MQTT_CONNECT"), mark("END")]  # fmt: skip
    groups = list(classify_counted(segments, "1.2").groups)
    assert groups == [
        "CLIENT_HELLO", "WAIT_SERVER_FLIGHT", "SERVER_HELLO", "KEY_DERIVE", "CLIENT_FINISHED",
        "WAIT_SERVER_FINISHED", "FINISHED", "MQTT_CONNECT",
    ]  # fmt: skip


def test_replay_waits_for_the_network_and_computes_at_the_clock():
    """1e6 instructions per second: 0.5 s to the ClientHello; the server's bytes arrive 0.2 s
    after it; 0.3 s of processing after them."""
    segments = [mark("CLIENT_HELLO", 500_000), io("w", 10, 0), io("r", 10, 300_000),
                mark("END")]  # fmt: skip
    assert replay(segments, [(10, 200_000_000)], 1e6) == pytest.approx(0.5 + 0.2 + 0.3)
    # bytes already there when the device asks: no wait
    assert replay(segments, [(10, 0)], 1e6) == pytest.approx(0.8)
    # a read that needs the second chunk waits for it, not the first
    assert replay(segments, [(4, 10_000_000), (10, 400_000_000)], 1e6) == pytest.approx(1.2)
