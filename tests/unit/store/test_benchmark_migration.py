"""A handshake benchmark stored by schema version 7 (imitation agent records: three handshakes
rows per connection, the statistics in runs.details_json, groups in trace_groups) opens in
version 9's tables of its own: through `db rebuild` from its record file and through the
database migration, the two giving the same rows, every value the record held kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from tests.unit.store.test_store_schema import drop_cost_columns, set_meta_version

from iotsecbench.store import read, schema
from iotsecbench.store.duckdb_store import ResultsStore
from iotsecbench.store.rebuild import rebuild

OLD = Path(__file__).resolve().parents[2] / "data" / "bench-handshake-v7"
RUN = "handshake-00-tls1.3_x25519_ecdsa-p256"


def old_record() -> dict:
    return json.loads((OLD / "runs" / RUN / "record.json").read_text())


@pytest.fixture
def rebuilt(tmp_path: Path) -> Path:
    target = tmp_path / "rebuilt"
    shutil.copytree(OLD, target, ignore=shutil.ignore_patterns("README.md"))
    assert rebuild(target) == 1
    return target


@pytest.fixture
def migrated(tmp_path: Path) -> Path:
    """The same run in a version 7 database (the record's rows inserted as they were), then
    opened by this iotsecbench."""
    target = tmp_path / "migrated"
    with ResultsStore.open(target):
        pass
    record = old_record()
    connection = duckdb.connect(str(target / "results.duckdb"))
    drop_cost_columns(connection)
    connection.register("incoming", pa.Table.from_pylist([record["run"]]))
    columns = ", ".join(record["run"])
    connection.execute(f"INSERT INTO runs ({columns}) SELECT {columns} FROM incoming")
    for name in ("handshakes", "trace_groups"):
        connection.register("incoming", pa.Table.from_pydict(record["tables"][name]))
        columns = ", ".join(record["tables"][name])
        connection.execute(f"INSERT INTO {name} ({columns}) SELECT {columns} FROM incoming")
    connection.close()
    set_meta_version(target, 7)
    return target


def test_every_connection_of_the_old_record_arrives_with_its_phases(rebuilt: Path) -> None:
    old = old_record()["tables"]["handshakes"]
    phases = {
        (json.loads(detail)["repetition"], phase): (start, end, wall, cpu)
        for phase, start, end, wall, cpu, detail in zip(
            old["phase"], old["t_start_ns"], old["t_end_ns"], old["wall_ns"], old["cpu_ns"],
            old["detail_json"], strict=True,
        )
    }  # fmt: skip
    connections = read.table(rebuilt, "handshake_connections")
    assert len(connections) == 3 and connections["target"].isna().all()  # on this host
    for row in connections.itertuples():
        tcp = phases[(row.repetition, "tcp_connect")]
        tls = phases[(row.repetition, "tls_handshake")]
        mqtt = phases[(row.repetition, "mqtt_connect")]
        assert (row.t_start_ns, row.tcp_connect_ns, row.tcp_connect_cpu_ns) == (
            tcp[0], tcp[2], tcp[3],
        )  # fmt: skip
        assert (row.tls_start_ns, row.tls_end_ns, row.tls_cpu_ns) == (tls[0], tls[1], tls[3])
        assert (row.t_ready_ns, row.t_connack_ns, row.mqtt_connect_cpu_ns) == mqtt[:2] + mqtt[3:]
        assert json.loads(row.negotiated_json)["group"] == "x25519"
        assert row.tcp_bytes_sent > 0 and row.tcp_bytes_received > 0
    # The imitation agent rows are gone; the phases read back as every connection's phases.
    assert read.table(rebuilt, "handshakes").empty
    assert len(read.handshake_phases(rebuilt)) == len(old["phase"])


def test_groups_move_and_the_placeholders_are_cleared(rebuilt: Path) -> None:
    old = old_record()["tables"]["trace_groups"]
    groups = read.table(rebuilt, "handshake_groups")
    assert list(groups["group_name"]) == old["group_name"]
    assert list(groups["on_cpu_ns"]) == old["on_cpu_ns"]
    assert groups["instructions"].isna().all()  # timed, not counted
    run = read.runs_frame(rebuilt).iloc[0]
    assert all(pd_na(run[key]) for key in ("payload_bytes", "rate_hz", "qos", "duration_s"))
    assert run["cost_method"] == "traced"  # found by its column, as migrate_to_8 set it


def pd_na(value: object) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_the_migration_and_the_rebuild_agree(migrated: Path, rebuilt: Path) -> None:
    for name in ("handshake_connections", "handshake_groups", "handshakes", "runs"):
        a, b = read.table(migrated, name), read.table(rebuilt, name)
        assert a.astype(str).equals(b.astype(str)), name
    with ResultsStore.open(migrated, read_only=True) as store:
        tables = {
            name
            for (name,) in store.connection.execute(
                "SELECT table_name FROM information_schema.tables"
            ).fetchall()
        }
    assert tables == set(schema.TABLES)  # trace_groups is gone


def test_a_report_finds_the_old_benchmark_traced_with_its_groups(rebuilt: Path) -> None:
    """What the iotst views read (tests/unit/report/test_figures_iotst.py draws them)."""
    from iotsecbench.report import figures_iotst
    from iotsecbench.report.data import load

    data = load(rebuilt)
    traced = figures_iotst.traced_configurations(data)
    assert [label for label, _ in traced] == ["tls1.3/x25519/ecdsa-p256"]
    assert traced[0][1]["network_invariant_cpu_s"]["n"] == 3
    assert data.handshake_groups is not None and len(data.handshake_groups) == len(
        old_record()["tables"]["trace_groups"]["group_name"]
    )
