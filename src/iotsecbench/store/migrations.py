"""Upgrading results databases made by older schema versions, one step at a time.

``MIGRATIONS[N]`` turns a version N-1 database into version N (pyperf and asv upgrade old
result files on load the same way). When the schema changes, add ``migrate_to_N(connection)``
here and register it. Each step spells out its SQL, frozen as it was for that version.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import duckdb

from iotsecbench.errors import DataError
from iotsecbench.store import schema

Migration = Callable[[duckdb.DuckDBPyConnection], None]


def migrate_to_2(connection: duckdb.DuckDBPyConnection) -> None:
    """Emulated networks: runs.network, runs.tcp_retransmissions, table host_counters."""
    connection.execute("ALTER TABLE runs ADD COLUMN network VARCHAR")
    connection.execute("UPDATE runs SET network = 'loopback'")  # all version-1 runs were
    connection.execute("ALTER TABLE runs ADD COLUMN tcp_retransmissions BIGINT")
    connection.execute(
        "CREATE TABLE host_counters (run_id VARCHAR NOT NULL, host VARCHAR, source VARCHAR, "
        "name VARCHAR, value BIGINT)"
    )


def migrate_to_3(connection: duckdb.DuckDBPyConnection) -> None:
    """The block-sizes study: how messages travel and per-byte metrics on runs."""
    for name, sql_type in (
        ("message_transport", "VARCHAR"),
        ("method", "VARCHAR"),
        ("pacing", "VARCHAR"),
        ("payload_bytes_delivered", "BIGINT"),
        ("throughput_kib_s", "DOUBLE"),
        ("wire_bytes_per_payload_byte", "DOUBLE"),
        ("energy_emitter_j", "DOUBLE"),
        ("energy_receiver_j", "DOUBLE"),
        ("energy_per_byte_emitter_uj", "DOUBLE"),
        ("energy_per_byte_receiver_uj", "DOUBLE"),
        ("cpu_per_byte_emitter_us", "DOUBLE"),
        ("cpu_per_byte_receiver_us", "DOUBLE"),
        ("echoes", "BIGINT"),
        ("echo_rtt_p50_ms", "DOUBLE"),
        ("echo_rtt_p90_ms", "DOUBLE"),
        ("echo_rtt_p99_ms", "DOUBLE"),
    ):
        connection.execute(f"ALTER TABLE runs ADD COLUMN {name} {sql_type}")
    # Every earlier run went through the broker, one way, at a fixed rate.
    connection.execute(
        "UPDATE runs SET message_transport = 'mqtt', method = 'unidirectional', "
        "pacing = 'fixed-rate'"
    )


def migrate_to_4(connection: duckdb.DuckDBPyConnection) -> None:
    """The iotst study: table trace_groups (empty for every earlier run)."""
    connection.execute(
        "CREATE TABLE trace_groups (run_id VARCHAR NOT NULL, repetition BIGINT, "
        "group_name VARCHAR, position BIGINT, on_cpu_ns BIGINT, network_wait_ns BIGINT, "
        "runnable_ns BIGINT, other_ns BIGINT, longest_run_ns BIGINT, markers BIGINT)"
    )


def migrate_to_5(connection: duckdb.DuckDBPyConnection) -> None:
    """Measured energy: tables meter_traces, meter_samples, meter_phases (empty: nothing was
    attached before)."""
    connection.execute(
        "CREATE TABLE meter_traces (run_id VARCHAR NOT NULL, agent VARCHAR, file VARCHAR, "
        "sha256 VARCHAR, format VARCHAR, samples BIGINT, rate_hz DOUBLE, "
        "trace_duration_s DOUBLE, method VARCHAR, offset_s DOUBLE, anchor_s DOUBLE, "
        "clock_ratio DOUBLE, correlation DOUBLE, detail VARCHAR, voltage_v DOUBLE, "
        "voltage_source VARCHAR, charge_mc DOUBLE, mean_current_ma DOUBLE, attached_utc VARCHAR)"
    )
    connection.execute(
        "CREATE TABLE meter_samples (run_id VARCHAR NOT NULL, agent VARCHAR, t_ns BIGINT, "
        "window_s DOUBLE, current_ma DOUBLE)"
    )
    connection.execute(
        "CREATE TABLE meter_phases (run_id VARCHAR NOT NULL, agent VARCHAR, phase VARCHAR, "
        "seq BIGINT, t_start_ns BIGINT, t_end_ns BIGINT, charge_uc DOUBLE, "
        "mean_current_ma DOUBLE, energy_uj DOUBLE)"
    )


def migrate_to_6(connection: duckdb.DuckDBPyConnection) -> None:
    """Native device agents: the stack, its heap and footprint, the achieved rate (NULL for
    every earlier run: a NULL stack means openssl, the only one there was)."""
    for column in schema.NATIVE_COLUMNS:
        connection.execute(f"ALTER TABLE runs ADD COLUMN {column.name} {column.sql_type}")


def migrate_to_7(connection: duckdb.DuckDBPyConnection) -> None:
    """Scale: the fleet's figures and where each run ran on runs; device_index on the per-agent
    tables (NULL for every earlier run: one device, on this machine)."""
    for column in schema.SCALE_COLUMNS:
        connection.execute(f"ALTER TABLE runs ADD COLUMN {column.name} {column.sql_type}")
    for table in ("events", "messages", "samples", "handshakes", "operations"):
        column = schema.TABLES[table].column("device_index")
        connection.execute(f"ALTER TABLE {table} ADD COLUMN {column.name} {column.sql_type}")


def migrate_to_8(connection: duckdb.DuckDBPyConnection) -> None:
    """runs.cost_method: 'traced' for the runs `bench handshake --trace` stored (their trace
    statistics in details_json, the one place an earlier version kept that fact), 'timed'
    for every other (nothing was counted before)."""
    (column,) = schema.COST_COLUMNS
    connection.execute(f"ALTER TABLE runs ADD COLUMN {column.name} {column.sql_type}")
    connection.execute(f"UPDATE runs SET {column.name} = ({TRACED_BEFORE_VERSION_8})")


# How a run stored before version 8 tells that it was traced (migrate_to_8 and records read
# by rebuild): its details_json holds the trace statistics.
TRACED_BEFORE_VERSION_8 = (
    "CASE WHEN details_json LIKE '%\"network_invariant_cpu_s\"%' THEN 'traced' ELSE 'timed' END"
)


def cost_method_before_version_8(details_json: Any) -> str:
    """``runs.cost_method`` of a run stored before version 8, as migrate_to_8 sets it."""
    text = details_json if isinstance(details_json, str) else json.dumps(details_json or {})
    return "traced" if '"network_invariant_cpu_s"' in text else "timed"


# The columns trace_groups had (versions 4-8), all kept in handshake_groups.
_GROUP_COLUMNS = (
    "run_id", "repetition", "group_name", "position", "on_cpu_ns", "network_wait_ns",
    "runnable_ns", "other_ns", "longest_run_ns", "markers",
)  # fmt: skip
# What a version 4–8 benchmark kept per connection phase (handshakes.detail_json) and the
# version 9 column it becomes.
_TLS_DETAIL = {
    "t_start_ns": "tls_start_ns", "t_end_ns": "tls_end_ns", "thread_cpu_ns": "tls_cpu_ns",
    "process_cpu_ns": "tls_process_cpu_ns", "tcp_bytes_sent": "tcp_bytes_sent",
    "tcp_bytes_received": "tcp_bytes_received", "tcp_segments_out": "tcp_segments_out",
    "tcp_segments_in": "tcp_segments_in", "tcp_retransmissions": "tcp_retransmissions",
    "tcp_mss": "tcp_mss", "tls_heap_peak_bytes": "tls_heap_peak_bytes",
}  # fmt: skip
_PLACEHOLDERS = ("payload_bytes", "rate_hz", "qos", "duration_s")  # a benchmark publishes nothing


def is_benchmark(details_json: str | None) -> bool:
    """A `bench handshake` run stored before version 9 (its statistics in details_json)."""
    try:
        details = json.loads(details_json or "{}")
    except json.JSONDecodeError:
        return False
    return isinstance(details, dict) and details.get("benchmark") == "handshake"


def benchmark_connections(run_id: str, phases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A version 4–8 benchmark's handshakes rows (three phases per connection, the connection
    in detail_json) as version 9 handshake_connections rows. What those versions did not
    keep (total CPU, the client's port, the traced totals) stays NULL."""
    connections: dict[int, dict[str, Any]] = {}
    for phase in phases:
        try:
            detail = json.loads(phase.get("detail_json") or "{}")
            repetition = int(detail["repetition"])
        except (ValueError, KeyError, TypeError) as error:
            raise DataError(
                f"benchmark run {run_id}: a {phase.get('phase')} phase without its connection "
                f"({error!r}); its results cannot be converted to schema version 9"
            ) from None
        row = connections.setdefault(
            repetition,
            {"run_id": run_id, "repetition": repetition, "connection_order": detail.get("order")},
        )
        if phase["phase"] == "tcp_connect":
            row.update(
                t_start_ns=phase["t_start_ns"],
                tcp_connect_ns=phase["wall_ns"],
                tcp_connect_cpu_ns=phase["cpu_ns"],
            )
        elif phase["phase"] == "tls_handshake":
            row.update({column: detail.get(key) for key, column in _TLS_DETAIL.items()})
            row["negotiated_json"] = json.dumps(detail.get("negotiated"), sort_keys=True)
        elif phase["phase"] == "mqtt_connect":
            row.update(
                t_ready_ns=phase["t_start_ns"],
                t_connack_ns=phase["t_end_ns"],
                mqtt_connect_cpu_ns=phase["cpu_ns"],
            )
    return [connections[repetition] for repetition in sorted(connections)]


def migrate_to_9(connection: duckdb.DuckDBPyConnection) -> None:
    """A typed handshake benchmark: its connections out of handshakes into
    handshake_connections, trace_groups renamed handshake_groups with instruction columns,
    and NULL for what a benchmark run never had (payload, rate, QoS, duration)."""
    # The new tables from the schema's definitions, as migrate_to_6 and 7 take their columns.
    connection.execute(schema.HANDSHAKE_CONNECTIONS.ddl())
    connection.execute(schema.HANDSHAKE_GROUPS.ddl())
    listed = ", ".join(_GROUP_COLUMNS)
    connection.execute(f"INSERT INTO handshake_groups ({listed}) SELECT {listed} FROM trace_groups")
    connection.execute("DROP TABLE trace_groups")
    runs = connection.execute("SELECT run_id, details_json FROM runs").fetchall()
    names = schema.HANDSHAKE_CONNECTIONS.column_names
    for run_id, details_json in runs:
        if not is_benchmark(details_json):
            continue
        cursor = connection.execute(
            "SELECT phase, t_start_ns, t_end_ns, wall_ns, cpu_ns, detail_json FROM handshakes "
            "WHERE run_id = ?",
            [run_id],
        )
        keys = [description[0] for description in cursor.description]
        phases = [dict(zip(keys, row, strict=True)) for row in cursor.fetchall()]
        rows = benchmark_connections(run_id, phases)
        if rows:
            connection.executemany(
                f"INSERT INTO handshake_connections ({', '.join(names)}) "
                f"VALUES ({', '.join('?' for _ in names)})",
                [[row.get(name) for name in names] for row in rows],
            )
        connection.execute("DELETE FROM handshakes WHERE run_id = ?", [run_id])
        cleared = ", ".join(f"{name} = NULL" for name in _PLACEHOLDERS)
        connection.execute(f"UPDATE runs SET {cleared} WHERE run_id = ?", [run_id])


def upgrade_record(
    version: int, run: dict[str, Any], tables: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run record file (``runs/*/record.json``: the run row, each table column-oriented) of
    an older version as the current version's: what the database migrations do, row by
    row, for the versions in ``RECORDS_READABLE_AS_CURRENT``."""
    run, tables = dict(run), dict(tables)
    if version < 2:
        run = {"network": "loopback", **run}  # as migrate_to_2 does in the database
    if version < 8:  # as migrate_to_8 does
        run = {"cost_method": cost_method_before_version_8(run.get("details_json")), **run}
    if version < 9:
        if "trace_groups" in tables:
            tables["handshake_groups"] = tables.pop("trace_groups")
        if is_benchmark(run.get("details_json")):
            phases = tables.pop("handshakes", None) or {}
            rows = [
                dict(zip(phases, values, strict=True))
                for values in zip(*phases.values(), strict=True)
            ]
            connections = benchmark_connections(run["run_id"], rows)
            tables["handshake_connections"] = {
                name: [row.get(name) for row in connections]
                for name in schema.HANDSHAKE_CONNECTIONS.column_names
            }
            run.update(dict.fromkeys(_PLACEHOLDERS))
    return run, tables


def migrate_to_10(connection: duckdb.DuckDBPyConnection) -> None:
    """Fleets that scale: table fleet_devices (empty for earlier runs, whose every row is raw)."""
    connection.execute(
        "CREATE TABLE fleet_devices (run_id VARCHAR NOT NULL, device_index INTEGER NOT NULL, "
        "raw INTEGER, messages_sent BIGINT, messages_delivered BIGINT, messages_lost BIGINT, "
        "duplicates BIGINT, setup_ms DOUBLE, tls_handshake_ms DOUBLE, setup_cpu_ns BIGINT, "
        "latency_p50_ms DOUBLE, latency_p99_ms DOUBLE, latency_max_ms DOUBLE, "
        "emitter_cpu_ns BIGINT, receiver_cpu_ns BIGINT, reconnections BIGINT, "
        "reconnect_ms DOUBLE, reconnect_resumed BIGINT, worker VARCHAR)"
    )


MIGRATIONS: dict[int, Migration] = {
    2: migrate_to_2,
    3: migrate_to_3,
    4: migrate_to_4,
    5: migrate_to_5,
    6: migrate_to_6,
    7: migrate_to_7,
    8: migrate_to_8,
    9: migrate_to_9,
    10: migrate_to_10,
}

# Record files (runs/*/record.json) of these older versions read as current ones, through
# upgrade_record: their upgrades added nullable columns (NULL, or what the migration sets:
# version 8's cost_method) and tables (empty), or moved rows (version 9: a benchmark's
# connections), so rebuild accepts them. (Version 3 set values in its new runs columns that
# its records lack.)
RECORDS_READABLE_AS_CURRENT: frozenset[int] = frozenset({1, 2, 4, 5, 6, 7, 8})


def check_readable(version: int, where: str) -> None:
    """Refuse results made by a newer iotsecbench: we cannot know what their columns mean."""
    if version > schema.SCHEMA_VERSION:
        raise DataError(
            f"{where} uses results schema version {version}, newer than this iotsecbench "
            f"understands (version {schema.SCHEMA_VERSION}); upgrade iotsecbench to read it"
        )
    if version < 0:
        raise DataError(f"{where} records an invalid results schema version {version}")


def steps_from(version: int, where: str) -> list[tuple[int, Migration]]:
    """The migrations that take ``version`` to the current version, in order."""
    check_readable(version, where)
    steps = []
    for target in range(version + 1, schema.SCHEMA_VERSION + 1):
        step = MIGRATIONS.get(target)
        if step is None:
            raise DataError(
                f"{where} uses results schema version {version}, which this iotsecbench "
                f"cannot upgrade (no migration to version {target})"
            )
        steps.append((target, step))
    return steps


def upgrade(connection: duckdb.DuckDBPyConnection, version: int, where: str) -> int:
    """Apply every step from ``version`` to the current one in one transaction; return it."""
    steps = steps_from(version, where)
    if not steps:
        return version
    with transaction(connection):
        for target, step in steps:
            step(connection)
            connection.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(target)]
            )
    return schema.SCHEMA_VERSION


@contextlib.contextmanager
def transaction(connection: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """The store's one way to write: BEGIN, the body, COMMIT, then CHECKPOINT. Any
    exception in the body rolls back (a failing ROLLBACK does not hide the error that caused
    it) and propagates."""
    connection.execute("BEGIN TRANSACTION")
    try:
        yield
        connection.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            connection.execute("ROLLBACK")
        raise
    connection.execute("CHECKPOINT")
