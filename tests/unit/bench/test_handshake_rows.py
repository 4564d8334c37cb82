"""bench handshake's typed row builders: a measured connection (HandshakeSample) becomes one
handshake_connections row and, traced, its handshake_groups rows — every column the schema
declares, every value the sample held, nothing else; a connection counted on a device
(CountedSample) goes into the same tables."""

from __future__ import annotations

import json

from iotsecbench.agents.handshake import TlsHandshakeMeasurement
from iotsecbench.analysis.counted import CountedGroup, CountedRepetition
from iotsecbench.analysis.iotst import GroupCost, TracedRepetition
from iotsecbench.bench.device import CountedSample
from iotsecbench.bench.device_store import counted_connection_row, counted_group_rows
from iotsecbench.bench.handshake import HandshakeSample
from iotsecbench.bench.handshake_store import connection_row, group_rows
from iotsecbench.runner.counted import CountedConnection
from iotsecbench.store import schema
from iotsecbench.store.duckdb_store import to_arrow

TLS = TlsHandshakeMeasurement(
    t_start_ns=1_100, t_end_ns=3_100, thread_cpu_ns=1_500, process_cpu_ns=1_600,
    tcp_bytes_sent=287, tcp_bytes_received=1_239, tcp_segments_out=3, tcp_segments_in=2,
    tcp_retransmissions=0, tcp_mss=32_768,
)  # fmt: skip
TRACE = TracedRepetition(
    start_ns=1_000, end_ns=4_000,
    groups={"TCP_CONNECT": GroupCost(on_cpu_ns=90, markers=1, longest_run_ns=90),
            "CLIENT_HELLO": GroupCost(on_cpu_ns=700, network_wait_ns=400, markers=2,
                                      longest_run_ns=500)},
    on_cpu_ns=790, marker_cost_ns=21, network_wait_ns=400, runnable_ns=0, other_ns=10,
    idle_fraction_per_cpu={0: 0.5, 1: None}, packets_received=4, packets_sent=3,
    retransmissions=0,
)  # fmt: skip


# The columns only a connection counted on a device fills (bench.device_store).
COUNTED_ONLY = {"seed_hex", "instructions", "wait_instructions"}


def sample(trace: TracedRepetition | None = None) -> HandshakeSample:
    return HandshakeSample(
        repetition=2, order=7, t_start_ns=1_000, tcp_connect_ns=90, tcp_connect_cpu_ns=80,
        tls=TLS, t_ready_ns=3_200, t_connack_ns=3_900, mqtt_connect_cpu_ns=300,
        total_cpu_ns=1_900, negotiated={"version": "1.3", "group": "x25519"}, local_port=4242,
        trace=trace.to_dict() if trace is not None else None,
    )  # fmt: skip


def test_a_traced_connection_fills_every_column() -> None:
    row = connection_row(sample(TRACE))
    columns = set(schema.HANDSHAKE_CONNECTIONS.column_names) - {"run_id"} - COUNTED_ONLY
    assert set(row) == columns
    assert row["tls_cpu_ns"] == 1_500 and row["tls_end_ns"] - row["tls_start_ns"] == 2_000
    assert row["t_connack_ns"] - row["t_ready_ns"] == 700 and row["local_port"] == 4242
    assert row["trace_wall_ns"] == 3_000 and row["marker_cost_ns"] == 21
    assert row["idle_fraction_json"] == {"0": 0.5, "1": None} and row["target"] is None
    stored = to_arrow(schema.HANDSHAKE_CONNECTIONS, [row], defaults={"run_id": "r"})
    assert stored.column("negotiated_json")[0].as_py() == '{"group": "x25519", "version": "1.3"}'


def test_groups_keep_their_order_and_an_untraced_connection_has_none() -> None:
    rows = group_rows(sample(TRACE))
    assert [(r["group_name"], r["position"], r["repetition"]) for r in rows] == [
        ("TCP_CONNECT", 0, 2),
        ("CLIENT_HELLO", 1, 2),
    ]
    assert rows[1]["network_wait_ns"] == 400 and rows[1]["markers"] == 2
    to_arrow(schema.HANDSHAKE_GROUPS, rows, defaults={"run_id": "r"})  # valid rows
    untraced = connection_row(sample())
    assert group_rows(sample()) == [] and untraced["on_cpu_ns"] is None


def counted_sample() -> CountedSample:
    hello = CountedGroup(client=5_000, wait=700, io=40, primitives={"sha2": 1_200})
    hello.segments = 2
    chain = CountedGroup(client=90_000, wait=0, io=300, primitives={"ecc": 80_000, "sha2": 9})
    connection = CountedConnection(
        counted=CountedRepetition(groups={"CLIENT_HELLO": hello, "CERT_CHAIN": chain},
                                  setup=CountedGroup(client=11), boundaries=4, primitive_calls=3),
        segments=[], negotiated={"version": "1.3", "group": "x25519"}, tls=None,
        counters={"tls_heap_handshake_peak_bytes": 31_000}, t_start_ns=10, tcp_connect_ns=5,
        t_connack_ns=900, tcp={"tcp_bytes_sent": 300, "tcp_segments_in": 4},
    )  # fmt: skip
    return CountedSample(repetition=1, order=3, seed_hex="00ff", connection=connection)


def test_a_counted_connection_is_stored_by_the_same_tables() -> None:
    """A connection counted on a virtual MCU: one handshake_connections row with its target,
    seed and instructions (the host's clocks and traces NULL), its groups' instructions."""
    row = counted_connection_row(counted_sample(), "rv32imc")
    assert row["target"] == "rv32imc" and row["seed_hex"] == "00ff"
    assert row["instructions"] == 95_000 and row["wait_instructions"] == 700
    assert row["tls_heap_peak_bytes"] == 31_000 and row["tcp_bytes_sent"] == 300
    assert row["tcp_bytes_received"] is None and "tls_cpu_ns" not in row
    assert set(row) <= set(schema.HANDSHAKE_CONNECTIONS.column_names)
    to_arrow(schema.HANDSHAKE_CONNECTIONS, [row], defaults={"run_id": "r"})
    groups = counted_group_rows(counted_sample())
    assert [(g["group_name"], g["position"], g["instructions"]) for g in groups] == [
        ("CLIENT_HELLO", 0, 5_000),
        ("CERT_CHAIN", 1, 90_000),
    ]
    assert groups[0]["wait_instructions"] == 700 and groups[1]["io_instructions"] == 300
    assert json.loads(groups[1]["primitive_instructions_json"]) == {"ecc": 80_000, "sha2": 9}
    stored = to_arrow(schema.HANDSHAKE_GROUPS, groups, defaults={"run_id": "r"})
    assert stored.column("on_cpu_ns").null_count == 2  # not traced
