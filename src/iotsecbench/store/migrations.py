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


MIGRATIONS: dict[int, Migration] = {
    2: migrate_to_2,
    3: migrate_to_3,
    4: migrate_to_4,
    5: migrate_to_5,
    6: migrate_to_6,
    7: migrate_to_7,
    8: migrate_to_8,
}

# Record files (runs/*/record.json) of these older versions read as current ones: their
# upgrade only added nullable columns (NULL) and tables (empty), so rebuild accepts them.
# (Version 3 set values in its new runs columns; version 5 only added tables; version 6
# only nullable runs columns; version 7 nullable columns; version 8 a nullable column, which
# rebuild fills as migrate_to_8 does.)
RECORDS_READABLE_AS_CURRENT: frozenset[int] = frozenset({1, 2, 4, 5, 6, 7})


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
