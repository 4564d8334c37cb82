"""The schema definition: DDL, documentation, version refusal and the migration mechanism."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from iotsecbench.errors import DataError
from iotsecbench.store import docs, migrations, read, schema
from iotsecbench.store.duckdb_store import ResultsStore

REPOSITORY = Path(__file__).resolve().parents[3]


def runs_columns(results_dir: Path) -> list[str]:
    with ResultsStore.open(results_dir, read_only=True) as store:
        rows = store.connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs'"
        ).fetchall()
    return [name for (name,) in rows]


def set_meta_version(results_dir: Path, version: int) -> None:
    connection = duckdb.connect(str(results_dir / "results.duckdb"))
    connection.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(version)])
    connection.close()


def test_every_column_has_unit_and_description() -> None:
    for table in schema.TABLES.values():
        names = table.column_names
        assert len(names) == len(set(names)), table.name
        for column in table.columns:
            assert column.unit.strip() and column.description.strip(), (table.name, column.name)
        assert set(table.order_by) <= set(names), table.name
        if table.per_run:
            assert names[0] == "run_id", table.name


def test_version_history_starts_the_module_and_reaches_the_current_version() -> None:
    assert schema.__doc__ is not None
    versions = [int(v) for v in re.findall(r"^version (\d+): ", schema.__doc__, re.MULTILINE)]
    assert versions == list(range(1, schema.SCHEMA_VERSION + 1))
    assert schema.SCHEMA_VERSION == 10
    assert sorted(migrations.MIGRATIONS) == list(range(2, schema.SCHEMA_VERSION + 1))


def test_database_columns_follow_the_definitions(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        rows = store.connection.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "ORDER BY table_name, ordinal_position"
        ).fetchall()
        (version,) = store.connection.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'"
        ).fetchall()[0]
    assert version == str(schema.SCHEMA_VERSION)
    actual: dict[str, list[tuple[str, str]]] = {}
    for table_name, column_name, data_type in rows:
        actual.setdefault(table_name, []).append((column_name, data_type))
    expected = {
        table.name: [(column.name, column.sql_type) for column in table.columns]
        for table in schema.TABLES.values()
    }
    assert actual == expected


def test_results_format_doc_is_generated_from_the_schema() -> None:
    document = (REPOSITORY / "docs" / "results-format.md").read_text(encoding="utf-8")
    assert docs.replace_section(document) == document, (
        "docs/results-format.md is out of date: run "
        "python -m iotsecbench.store.docs docs/results-format.md"
    )
    for table in schema.TABLES.values():
        for column in table.columns:
            assert f"| `{column.name}` |" in document, (table.name, column.name)


def test_newer_schema_version_is_refused_and_left_untouched(results_dir: Path) -> None:
    with ResultsStore.open(results_dir):
        pass
    set_meta_version(results_dir, schema.SCHEMA_VERSION + 1)
    before = (results_dir / "results.duckdb").read_bytes()
    for read_only in (True, False):
        with pytest.raises(DataError, match="newer than this iotsecbench") as raised:
            ResultsStore.open(results_dir, read_only=read_only)
        assert raised.value.exit_code == 4
    assert (results_dir / "results.duckdb").read_bytes() == before


def test_older_version_is_upgraded_step_by_step_after_a_copy(
    results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ResultsStore.open(results_dir):
        pass
    applied: list[int] = []
    current = schema.SCHEMA_VERSION

    def migrate_to_next(connection: duckdb.DuckDBPyConnection) -> None:
        applied.append(current + 1)
        connection.execute("ALTER TABLE runs ADD COLUMN note VARCHAR")

    # Pretend this iotsecbench is one version ahead of the file on disk.
    monkeypatch.setattr(schema, "SCHEMA_VERSION", current + 1)
    monkeypatch.setitem(migrations.MIGRATIONS, current + 1, migrate_to_next)

    read.runs_frame(results_dir)  # a reader opening an old file upgrades it
    assert applied == [current + 1]
    assert "note" in runs_columns(results_dir)
    copies = list(results_dir.glob(f"results.duckdb.v{current}-*"))
    assert len(copies) == 1
    with ResultsStore.open(results_dir) as store:
        assert store.connection.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'"
        ).fetchall() == [(str(current + 1),)]
    assert applied == [current + 1]  # already current: not applied again


def drop_fleet_devices(connection: duckdb.DuckDBPyConnection) -> None:
    """What version 10 added, gone again: the database as version 9 made it."""
    connection.execute("DROP TABLE fleet_devices")


def drop_benchmark_tables(connection: duckdb.DuckDBPyConnection) -> None:
    """What versions 9 and 10 changed, undone: the database as version 8 made it
    (trace_groups)."""
    drop_fleet_devices(connection)
    connection.execute("DROP TABLE handshake_connections")
    connection.execute("ALTER TABLE handshake_groups DROP COLUMN instructions")
    connection.execute("ALTER TABLE handshake_groups DROP COLUMN primitive_instructions_json")
    connection.execute("ALTER TABLE handshake_groups RENAME TO trace_groups")


def drop_cost_columns(connection: duckdb.DuckDBPyConnection) -> None:
    """What versions 8 and 9 added, gone again: the database as version 7 made it."""
    drop_benchmark_tables(connection)
    for column in schema.COST_COLUMNS:
        connection.execute(f"ALTER TABLE runs DROP COLUMN {column.name}")


def drop_scale_columns(connection: duckdb.DuckDBPyConnection) -> None:
    """What versions 7 to 9 added, gone again: the database as version 6 made it."""
    drop_cost_columns(connection)
    for column in schema.SCALE_COLUMNS:
        connection.execute(f"ALTER TABLE runs DROP COLUMN {column.name}")
    for table in ("events", "messages", "samples", "handshakes", "operations"):
        connection.execute(f"ALTER TABLE {table} DROP COLUMN device_index")


def drop_native_columns(connection: duckdb.DuckDBPyConnection) -> None:
    """What versions 6 to 8 added, gone again: the database as version 5 made it."""
    drop_scale_columns(connection)
    for column in schema.NATIVE_COLUMNS:
        connection.execute(f"ALTER TABLE runs DROP COLUMN {column.name}")


def drop_meter_tables(connection: duckdb.DuckDBPyConnection) -> None:
    """What versions 5 to 8 added, gone again: the database as version 4 made it."""
    drop_native_columns(connection)
    for name in ("meter_traces", "meter_samples", "meter_phases"):
        connection.execute(f"DROP TABLE {name}")


def test_version_9_database_gains_the_fleet_devices_table(results_dir: Path) -> None:
    with ResultsStore.open(results_dir):
        pass
    connection = duckdb.connect(str(results_dir / "results.duckdb"))
    drop_fleet_devices(connection)
    connection.close()
    set_meta_version(results_dir, 9)
    frame = read.table(results_dir, "fleet_devices")
    assert list(frame.columns) == schema.FLEET_DEVICES.column_names and frame.empty


def test_version_7_database_finds_its_traced_runs_by_a_column(results_dir: Path) -> None:
    """Before version 8 a traced run (`bench handshake --trace`) was known only by its
    details_json; the migration marks it 'traced' and every other run 'timed'."""
    with ResultsStore.open(results_dir) as store:
        traced = '{"benchmark": "handshake", "network_invariant_cpu_s": {"mean": 0.002}}'
        for order, (run_id, details) in enumerate(
            (("traced", traced), ("timed", '{"broker_url": null}'), ("bare", None))
        ):
            store.connection.execute(
                "INSERT INTO runs (run_id, experiment_id, status, run_order, details_json) "
                "VALUES (?, 'e', 'ok', ?, ?)",
                [run_id, order, details],
            )
    connection = duckdb.connect(str(results_dir / "results.duckdb"))
    drop_cost_columns(connection)
    connection.close()
    set_meta_version(results_dir, 7)
    frame = read.runs_frame(results_dir)
    assert runs_columns(results_dir) == schema.RUNS.column_names
    assert list(frame["cost_method"]) == ["traced", "timed", "timed"]
    assert (
        migrations.cost_method_before_version_8('{"network_invariant_cpu_s": {"mean": 1.0}}')
        == "traced"
    )
    assert migrations.cost_method_before_version_8(None) == "timed"


def test_version_6_database_gains_the_scale_columns(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.connection.execute(
            "INSERT INTO runs (run_id, experiment_id, status) VALUES ('r1', 'e', 'ok')"
        )
    connection = duckdb.connect(str(results_dir / "results.duckdb"))
    drop_scale_columns(connection)
    connection.close()
    set_meta_version(results_dir, 6)
    frame = read.runs_frame(results_dir)
    assert runs_columns(results_dir) == schema.RUNS.column_names
    # Runs from before fleets and workers: one device, on this machine (NULL, not invented).
    assert frame["fleet_size"].isna().all() and frame["worker"].isna().all()
    assert list(read.table(results_dir, "messages").columns) == schema.MESSAGES.column_names


def test_version_5_database_gains_the_stack_columns(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.connection.execute(
            "INSERT INTO runs (run_id, experiment_id, status) VALUES ('r1', 'e', 'ok')"
        )
    connection = duckdb.connect(str(results_dir / "results.duckdb"))
    drop_native_columns(connection)
    connection.close()
    set_meta_version(results_dir, 5)
    frame = read.runs_frame(results_dir)
    assert runs_columns(results_dir) == schema.RUNS.column_names
    # Runs from before the factor: no stack recorded (they all ran on openssl).
    assert frame["stack"].isna().all() and frame["tls_heap_steady_bytes"].isna().all()


def test_version_4_database_gains_the_meter_tables(results_dir: Path) -> None:
    with ResultsStore.open(results_dir):
        pass
    connection = duckdb.connect(str(results_dir / "results.duckdb"))
    drop_meter_tables(connection)
    connection.close()
    set_meta_version(results_dir, 4)
    for table in (schema.METER_TRACES, schema.METER_SAMPLES, schema.METER_PHASES):
        frame = read.table(results_dir, table.name)
        assert frame.empty and list(frame.columns) == table.column_names


def test_version_1_database_gains_the_network_columns(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.connection.execute(
            "INSERT INTO runs (run_id, experiment_id, status) VALUES ('r1', 'e', 'ok')"
        )
    connection = duckdb.connect(str(results_dir / "results.duckdb"))
    for column in schema.BLOCK_COLUMNS:  # version 3's columns: not in a version-1 file
        connection.execute(f"ALTER TABLE runs DROP COLUMN {column.name}")
    drop_meter_tables(connection)
    connection.execute("DROP TABLE trace_groups")
    connection.execute("DROP TABLE host_counters")
    connection.execute("ALTER TABLE runs DROP COLUMN tcp_retransmissions")
    connection.execute("ALTER TABLE runs DROP COLUMN network")
    connection.close()
    set_meta_version(results_dir, 1)
    frame = read.runs_frame(results_dir)
    assert list(frame["network"]) == ["loopback"]
    assert runs_columns(results_dir) == schema.RUNS.column_names
    assert read.table(results_dir, "host_counters").empty


def test_version_2_database_gains_the_transport_columns(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.connection.execute(
            "INSERT INTO runs (run_id, experiment_id, status) VALUES ('r1', 'e', 'ok')"
        )
    connection = duckdb.connect(str(results_dir / "results.duckdb"))
    for column in schema.BLOCK_COLUMNS:
        connection.execute(f"ALTER TABLE runs DROP COLUMN {column.name}")
    drop_meter_tables(connection)
    connection.execute("DROP TABLE trace_groups")
    connection.close()
    set_meta_version(results_dir, 2)
    frame = read.runs_frame(results_dir)
    assert list(frame["message_transport"]) == ["mqtt"]
    assert list(frame["pacing"]) == ["fixed-rate"]
    assert runs_columns(results_dir) == schema.RUNS.column_names


def test_version_3_database_gains_the_trace_groups_table(results_dir: Path) -> None:
    with ResultsStore.open(results_dir):
        pass
    connection = duckdb.connect(str(results_dir / "results.duckdb"))
    drop_meter_tables(connection)
    connection.execute("DROP TABLE trace_groups")
    connection.close()
    set_meta_version(results_dir, 3)
    # Version 4's trace_groups is version 9's handshake_groups.
    assert read.table(results_dir, "handshake_groups").empty
    assert list(read.table(results_dir, "handshake_groups").columns) == (
        schema.HANDSHAKE_GROUPS.column_names
    )


def test_missing_migration_step_is_a_data_error(
    results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ResultsStore.open(results_dir):
        pass
    current = schema.SCHEMA_VERSION
    monkeypatch.setattr(schema, "SCHEMA_VERSION", current + 2)
    monkeypatch.setitem(migrations.MIGRATIONS, current + 2, lambda connection: None)
    monkeypatch.delitem(migrations.MIGRATIONS, current + 1, raising=False)
    with pytest.raises(DataError, match=f"no migration to version {current + 1}"):
        ResultsStore.open(results_dir)
    assert not list(results_dir.glob(f"results.duckdb.v{current}-*"))


def test_failed_migration_rolls_back(results_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ResultsStore.open(results_dir):
        pass

    def broken(connection: duckdb.DuckDBPyConnection) -> None:
        connection.execute("ALTER TABLE runs ADD COLUMN note VARCHAR")
        raise RuntimeError("step failed")

    current = schema.SCHEMA_VERSION
    monkeypatch.setattr(schema, "SCHEMA_VERSION", current + 1)
    monkeypatch.setitem(migrations.MIGRATIONS, current + 1, broken)
    with pytest.raises(RuntimeError, match="step failed"):
        ResultsStore.open(results_dir)
    monkeypatch.setattr(schema, "SCHEMA_VERSION", current)
    assert "note" not in runs_columns(results_dir)
