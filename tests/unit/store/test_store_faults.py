"""Faults around the database file: a second writer, corruption, rebuild, missing results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from store_rows import EXPERIMENT_ID, experiment_row, run_row, run_tables

from iotsecbench.errors import DataError, SpecError, StoreBusyError
from iotsecbench.store import duckdb_store, read
from iotsecbench.store.duckdb_store import ResultsStore
from iotsecbench.store.rebuild import rebuild

HOLDER = """
import sys, time
from iotsecbench.store.duckdb_store import ResultsStore
with ResultsStore.open(sys.argv[1]):
    print("holding", flush=True)
    time.sleep(60)
"""


def write_runs(results_dir: Path, run_ids: list[str]) -> None:
    with ResultsStore.open(results_dir) as store:
        store.ensure_experiment(experiment_row(), resume=True)
        for repetition, run_id in enumerate(run_ids):
            store.write_run(
                run_row(run_id, repetition), run_tables(), results_dir / "runs" / run_id
            )


@pytest.mark.integration
def test_second_process_gets_store_busy_naming_the_pid(
    results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ResultsStore.open(results_dir):
        pass
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(results_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        for read_only in (False, True):
            started = time.monotonic()
            with pytest.raises(StoreBusyError) as raised:
                ResultsStore.open(results_dir, read_only=read_only)
            assert time.monotonic() - started < 2.5
            message = str(raised.value)
            assert f"PID {holder.pid}" in message and "\n" not in message
            assert raised.value.exit_code == 3
            # The full wait is checked once; keep the rest of the suite fast.
            monkeypatch.setattr(duckdb_store, "BUSY_WAIT_S", 0.1)
    finally:
        holder.kill()
        holder.wait()


def test_corrupt_database_is_data_error_and_kept(results_dir: Path) -> None:
    results_dir.mkdir()
    garbage = os.urandom(64 * 1024)
    database = results_dir / "results.duckdb"
    database.write_bytes(garbage)
    for read_only in (False, True):
        with pytest.raises(DataError) as raised:
            ResultsStore.open(results_dir, read_only=read_only)
        assert f"iotsecbench db rebuild {results_dir}" in str(raised.value)
        assert raised.value.exit_code == 4
    assert database.read_bytes() == garbage


def test_leftover_wal_is_copied_aside_before_opening(results_dir: Path) -> None:
    write_runs(results_dir, ["r0"])
    (results_dir / "results.duckdb.wal").write_bytes(b"not a wal" * 10)
    with ResultsStore.open(results_dir) as store:
        assert store.completed_run_ids(EXPERIMENT_ID) == {"r0"}
    kept = list(results_dir.glob("results.duckdb.wal.kept-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == b"not a wal" * 10


def test_reader_without_results_gets_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no results database"):
        read.runs_frame(tmp_path)


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_rebuild_restores_every_run_and_keeps_the_old_file(results_dir: Path) -> None:
    write_runs(results_dir, ["r0", "r1", "r2"])
    with ResultsStore.open(results_dir) as store:
        store.write_run(
            run_row("r3", 3, status="failed", error="agent hung"),
            {"messages": run_tables()["messages"][:1]},
            results_dir / "runs" / "r3",
        )
    before = {name: read.table(results_dir, name) for name in ("runs", "messages", "samples")}
    database = results_dir / "results.duckdb"
    database.write_bytes(b"garbage" * 1000)

    assert rebuild(results_dir) == 4

    aside = list(results_dir.glob("results.duckdb.aside-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == b"garbage" * 1000
    for name, frame in before.items():
        after = read.table(results_dir, name)
        assert after.equals(frame), name
    assert read.table(results_dir, "experiments").iloc[0].to_dict() == experiment_row()
    # The rebuilt store accepts further runs and resume sees the completed ones.
    with ResultsStore.open(results_dir) as store:
        assert store.ensure_experiment(experiment_row(), resume=True) == EXPERIMENT_ID
        assert store.completed_run_ids(EXPERIMENT_ID) == {"r0", "r1", "r2"}
    assert not list(results_dir.glob(".results.duckdb.rebuild-*"))


def test_rebuild_refuses_unreadable_record_and_changes_nothing(results_dir: Path) -> None:
    write_runs(results_dir, ["r0", "r1"])
    record = results_dir / "runs" / "r1" / "record.json"
    record.write_text(record.read_text()[:100])
    database_bytes = (results_dir / "results.duckdb").read_bytes()
    with pytest.raises(DataError, match=r"r1/record\.json is unreadable"):
        rebuild(results_dir)
    assert (results_dir / "results.duckdb").read_bytes() == database_bytes
    assert not list(results_dir.glob("results.duckdb.aside-*"))


def test_rebuild_refuses_records_from_a_newer_schema(results_dir: Path) -> None:
    write_runs(results_dir, ["r0"])
    record = results_dir / "runs" / "r0" / "record.json"
    document = json.loads(record.read_text())
    document["schema_version"] = 99
    record.write_text(json.dumps(document))
    with pytest.raises(DataError, match="newer than this iotsecbench"):
        rebuild(results_dir)


@pytest.mark.integration
def test_rebuild_refuses_while_a_writer_holds_the_database(
    results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(duckdb_store, "BUSY_WAIT_S", 0.1)
    write_runs(results_dir, ["r0"])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(results_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        with pytest.raises(StoreBusyError):
            rebuild(results_dir)
    finally:
        holder.kill()
        holder.wait()
    assert not list(results_dir.glob("results.duckdb.aside-*"))
