"""Writing runs and reading them back: exact round trips, derived frames, replacement."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from store_rows import EXPERIMENT_ID, experiment_row, run_row, run_tables

from iotsecbench.store import read
from iotsecbench.store.duckdb_store import ResultsStore


def write_two_runs(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.ensure_experiment(experiment_row(), resume=False)
        for repetition, run_id in enumerate(("r0", "r1")):
            store.write_run(
                run_row(run_id, repetition, t0_ns=1_000_000_000 * (repetition + 1)),
                run_tables(t0_ns=1_000_000_000 * (repetition + 1)),
                results_dir / "runs" / run_id,
            )


def test_open_creates_directory_database_and_schema(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        assert store.experiment() is None
        tables = {
            name
            for (name,) in store.connection.execute(
                "SELECT table_name FROM information_schema.tables"
            ).fetchall()
        }
    assert (results_dir / "results.duckdb").is_file()
    assert {"meta", "experiments", "runs", "messages", "samples"} <= tables
    # Reopening an existing store, for writing and for reading, works.
    with ResultsStore.open(results_dir):
        pass
    with ResultsStore.open(results_dir, read_only=True) as store:
        assert store.read_only


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_two_runs_read_back_exactly_including_nulls(results_dir: Path) -> None:
    write_two_runs(results_dir)
    runs = read.runs_frame(results_dir)
    assert list(runs["run_id"]) == ["r0", "r1"]
    first = runs.iloc[0]
    assert first["payload_bytes"] == 64 and first["rate_hz"] == 10.0
    assert first["t0_ns"] == 1_000_000_000
    assert pd.isna(first["error"]) and pd.isna(first["details_json"])
    assert pd.isna(first["messages_lost"])  # never given: NULL, not 0
    assert first["run_dir"] == "runs/r0"

    messages = read.table(results_dir, "messages")
    assert len(messages) == 6
    lost = messages[(messages["run_id"] == "r0") & (messages["seq"] == 1)].iloc[0]
    assert lost["status"] == "lost"
    assert pd.isna(lost["t_delivered_ns"]) and pd.isna(lost["duplicates"])
    delivered = messages[(messages["run_id"] == "r1") & (messages["seq"] == 0)].iloc[0]
    assert delivered["t_delivered_ns"] == 2_000_000_000 + 3_500_000
    assert delivered["seal_cpu_ns"] == 50_000

    events = read.table(results_dir, "events")
    assert list(events["detail_json"]) == ["{}", "{}"]  # dicts stored as JSON text
    handshakes = read.table(results_dir, "handshakes")
    assert json.loads(handshakes["detail_json"].iloc[0]) == {
        "cipher": "ECDHE-RSA-AES128-GCM-SHA256"
    }
    samples = read.table(results_dir, "samples")
    assert samples["current_ma"].isna().sum() == 2
    assert read.table(results_dir, "operations")["amount"].tolist() == [64, 64]
    experiments = read.table(results_dir, "experiments")
    assert experiments.iloc[0].to_dict() == experiment_row()


def test_current_frame_arithmetic(results_dir: Path) -> None:
    write_two_runs(results_dir)
    frame = read.current_frame(results_dir)
    assert list(frame.columns) == ["configuration", "device", "run", "time_s", "current_ma"]
    # The receiver sample has no modelled current and is left out.
    assert len(frame) == 4
    assert list(frame["run"]) == [0, 0, 1, 1]
    assert frame["time_s"].tolist() == pytest.approx([0.1, 0.2, 0.1, 0.2])
    assert frame["current_ma"].tolist() == [80.5, 81.25, 80.5, 81.25]
    assert set(frame["configuration"]) == {"tls1.2"} and set(frame["device"]) == {"emitter"}


def test_latency_frame_arithmetic(results_dir: Path) -> None:
    write_two_runs(results_dir)
    frame = read.latency_frame(results_dir)
    assert list(frame.columns) == ["configuration", "run", "seq", "latency_ms"]
    assert list(frame["seq"]) == [0, 2, 0, 2]
    assert frame["latency_ms"].tolist() == pytest.approx([2.5, 4.0, 2.5, 4.0])


def test_frames_leave_out_failed_runs(results_dir: Path) -> None:
    write_two_runs(results_dir)
    with ResultsStore.open(results_dir) as store:
        store.write_run(
            run_row("r1", 1, status="failed", error="broker exited (signal 9)"),
            run_tables(),
            results_dir / "runs" / "r1",
        )
    assert set(read.latency_frame(results_dir)["run"]) == {0}
    assert set(read.current_frame(results_dir)["run"]) == {0}


def test_write_run_replaces_a_run(results_dir: Path) -> None:
    write_two_runs(results_dir)
    with ResultsStore.open(results_dir) as store:
        tables = run_tables()
        tables["messages"] = tables["messages"][:1]
        del tables["samples"]
        store.write_run(run_row("r0", 0, messages_sent=1), tables, results_dir / "runs" / "r0")
        store.write_run(run_row("r0", 0, messages_sent=1), tables, results_dir / "runs" / "r0")
    messages = read.table(results_dir, "messages")
    assert (messages["run_id"] == "r0").sum() == 1
    assert (read.table(results_dir, "samples")["run_id"] == "r0").sum() == 0
    runs = read.runs_frame(results_dir)
    assert len(runs) == 2
    assert runs.set_index("run_id").loc["r0", "messages_sent"] == 1


def test_failed_run_recorded_with_error_and_partial_rows(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.ensure_experiment(experiment_row(), resume=False)
        tables = {"messages": run_tables()["messages"][:2]}
        store.write_run(
            run_row("bad", 0, status="failed", error="receiver exited with code 1"),
            tables,
            results_dir / "runs" / "bad",
        )
        assert store.completed_run_ids(EXPERIMENT_ID) == set()
        store.write_run(run_row("good", 1), run_tables(), results_dir / "runs" / "good")
        assert store.completed_run_ids(EXPERIMENT_ID) == {"good"}
    runs = read.runs_frame(results_dir).set_index("run_id")
    assert runs.loc["bad", "status"] == "failed"
    assert runs.loc["bad", "error"] == "receiver exited with code 1"
    assert (read.table(results_dir, "messages")["run_id"] == "bad").sum() == 2


def test_record_file_holds_everything_and_no_temporary_is_left(results_dir: Path) -> None:
    write_two_runs(results_dir)
    run_dir = results_dir / "runs" / "r0"
    assert [p.name for p in run_dir.iterdir()] == ["record.json"]
    record = json.loads((run_dir / "record.json").read_text())
    assert record["schema_version"] == 10
    assert record["run"]["run_id"] == "r0" and record["run"]["error"] is None
    assert record["tables"]["messages"]["seq"] == [0, 1, 2]
    assert record["tables"]["messages"]["run_id"] == ["r0"] * 3
    assert record["tables"]["messages"]["t_delivered_ns"][1] is None


def test_bad_rows_are_bugs_and_write_nothing(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.ensure_experiment(experiment_row(), resume=False)
        run_dir = results_dir / "runs" / "x"
        with pytest.raises(ValueError, match=r"unknown column.*messages: latency"):
            store.write_run(run_row("x", 0), {"messages": [{"seq": 1, "latency": 3}]}, run_dir)
        with pytest.raises(ValueError, match=r"unknown column.*runs: colour"):
            store.write_run(run_row("x", 0, colour="red"), {}, run_dir)
        with pytest.raises(ValueError, match="unknown per-run table"):
            store.write_run(run_row("x", 0), {"traces": []}, run_dir)
        with pytest.raises(ValueError, match="status"):
            store.write_run(run_row("x", 0, status="done"), {}, run_dir)
        with pytest.raises(ValueError, match="column seq"):
            store.write_run(run_row("x", 0), {"messages": [{"seq": "one"}]}, run_dir)
        with pytest.raises(ValueError, match="other run"):
            store.write_run(run_row("x", 0), {"messages": [{"run_id": "y", "seq": 1}]}, run_dir)
    assert not run_dir.exists()
    assert read.runs_frame(results_dir).empty


def test_nan_current_survives_as_double(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.ensure_experiment(experiment_row(), resume=False)
        tables = {"samples": [{"agent": "emitter", "t_ns": 1, "current_ma": math.inf}]}
        store.write_run(run_row("r", 0), tables, results_dir / "runs" / "r")
    assert read.table(results_dir, "samples")["current_ma"].iloc[0] == math.inf


def test_security_properties_per_cell(results_dir: Path) -> None:
    write_two_runs(results_dir)
    assert read.security_properties(results_dir) == {"tls1.2": {"confidentiality": True}}


def test_unknown_table_name_is_refused(results_dir: Path) -> None:
    write_two_runs(results_dir)
    from iotsecbench.errors import SpecError

    with pytest.raises(SpecError, match="unknown results table 'mesages'"):
        read.table(results_dir, "mesages")
