"""Signals while a run is stored, the directory's single writer, and resuming from DIR alone.

The experiment runs in this process with the simulated executor (the store is the point);
signals are sent to ourselves at the exact moments that used to lose a completed run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from tests.conftest import run_cli_forked

from iotsecbench.errors import EnvironmentProblem, Interrupted, StoreBusyError
from iotsecbench.runner.experiment import run_experiment
from iotsecbench.runner.simulated import SimulatedExecutor
from iotsecbench.spec.load import load_spec
from iotsecbench.store import duckdb_store, read
from iotsecbench.store.duckdb_store import ResultsStore

# Each run is a CLI process, signalled (tests/lanes.py).
pytestmark = pytest.mark.integration

SPEC = load_spec(
    overrides={
        "duration_s": 1,
        "repetitions": 1,
        "configurations": ["plain", "tls1.2", "psk-aes128-gcm"],
    }
)


class CountingExecutor(SimulatedExecutor):
    def __init__(self) -> None:
        self.executed: list[str] = []

    def execute(self, run, context, on_progress):  # type: ignore[no-untyped-def]
        self.executed.append(run.run_id)
        return super().execute(run, context, on_progress)


def run_sim(out: Path, executor: SimulatedExecutor | None = None, **options: bool):
    return run_experiment(
        SPEC, out, executor or SimulatedExecutor(), broker_version="simulated", **options
    )


@pytest.fixture(autouse=True)
def sigterm_like_the_cli() -> Iterator[None]:
    """`iotsecbench run` turns SIGTERM into KeyboardInterrupt; do the same here."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    yield
    signal.signal(signal.SIGTERM, previous)


def stored_ok(out: Path) -> set[str]:
    runs = read.runs_frame(out)
    return set(runs.loc[runs["status"] == "ok", "run_id"])


def recorded_ok(out: Path) -> set[str]:
    import json

    return {
        path.parent.name
        for path in out.glob("runs/*/record.json")
        if json.loads(path.read_text())["run"]["status"] == "ok"
    }


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("moment", ["after the record", "inside the transaction"])
def test_a_signal_while_a_run_is_stored_keeps_it_and_stops_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int, moment: str
) -> None:
    sent = []
    if moment == "after the record":
        original = duckdb_store.atomic_write_text

        def write_then_signal(path: Path, text: str) -> None:
            original(path, text)
            if path.name == "record.json" and not sent:
                sent.append(path.parent.name)
                os.kill(os.getpid(), signum)

        monkeypatch.setattr(duckdb_store, "atomic_write_text", write_then_signal)
    else:
        original_insert = duckdb_store._insert_arrow

        def signal_then_insert(connection, table, data):  # type: ignore[no-untyped-def]
            if table.name == "messages" and not sent:
                sent.append(table.name)
                os.kill(os.getpid(), signum)
            original_insert(connection, table, data)

        monkeypatch.setattr(duckdb_store, "_insert_arrow", signal_then_insert)
    out = tmp_path / "out"
    with pytest.raises(Interrupted, match="--resume --out"):
        run_sim(out)
    assert sent
    # The run being stored when the signal came is complete in the database; none after it ran.
    assert stored_ok(out) == recorded_ok(out)
    assert len(stored_ok(out)) == 1
    executor = CountingExecutor()
    run_sim(out, executor, resume=True)
    assert len(executor.executed) == 2 and not set(executor.executed) & recorded_ok(out) - set(
        executor.executed
    )
    assert len(stored_ok(out)) == 3


def test_sigint_just_after_the_database_is_created_leaves_its_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = duckdb_store.create_schema

    def signal_then_create(connection):  # type: ignore[no-untyped-def]
        os.kill(os.getpid(), signal.SIGINT)
        original(connection)

    monkeypatch.setattr(duckdb_store, "create_schema", signal_then_create)
    out = tmp_path / "out"
    with pytest.raises((Interrupted, KeyboardInterrupt)):
        run_sim(out)
    with ResultsStore.open(out, read_only=True):  # an iotsecbench database, not an empty file
        pass
    assert read.runs_frame(out).empty
    monkeypatch.undo()
    run_sim(out, resume=True)
    assert len(stored_ok(out)) == 3


def test_resume_restores_a_completed_run_the_database_lost(tmp_path: Path) -> None:
    """kill -9 between a run's record and its transaction: the record says ok, the DB lacks it."""
    out = tmp_path / "out"
    run_sim(out)
    lost = sorted(stored_ok(out))[1]
    before = read.runs_frame(out).set_index("run_id").loc[lost, "started_utc"]
    with duckdb.connect(str(out / "results.duckdb")) as connection:
        for table in ("messages", "samples", "events", "handshakes", "operations", "runs"):
            connection.execute(f"DELETE FROM {table} WHERE run_id = ?", [lost])
    executor = CountingExecutor()
    outcome = run_sim(out, executor, resume=True)
    assert executor.executed == [] and outcome.skipped == 3
    after = read.runs_frame(out).set_index("run_id").loc[lost, "started_utc"]
    assert after == before  # restored from its record, not measured again
    assert not read.table(out, "messages").query("run_id == @lost").empty


HOLDER = """
import sys, time
from iotsecbench.store.directory import DirectoryLock
with DirectoryLock(sys.argv[1]):
    print("holding", flush=True)
    time.sleep(60)
"""


def test_force_new_run_is_refused_while_another_process_writes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_sim(out)
    before = sorted(p.name for p in out.iterdir())
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        with pytest.raises(StoreBusyError, match=f"PID {holder.pid}"):
            run_sim(out, force_new=True)
        refused = run_cli_forked(
            "run", "--simulate", "--quiet", "--force-new-run", "--duration", "1", "--out", str(out)
        )
        assert refused.returncode == 3, refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and f"PID {holder.pid}" in lines[0]
    finally:
        holder.kill()
        holder.wait()
    assert sorted(p.name for p in out.iterdir()) == before  # nothing moved to previous-*
    run_sim(out, force_new=True)  # the holder is gone (even SIGKILL releases the lock)
    assert any(p.name.startswith("previous-") for p in out.iterdir())


def test_a_wal_copy_cut_short_by_a_full_disk_is_not_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    run_sim(out)
    (out / "results.duckdb.wal").write_bytes(b"left by a dead writer")

    def disk_full(source: Path, target: Path) -> None:
        Path(target).write_bytes(b"")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(duckdb_store.shutil, "copy2", disk_full)
    with pytest.raises(EnvironmentProblem, match="no space left"):
        ResultsStore.open(out)
    assert not list(out.glob("results.duckdb.wal.kept-*"))


def test_resume_with_only_out_takes_the_stored_experiment(tmp_path: Path, cli) -> None:
    out = tmp_path / "out"
    first = ["run", "--simulate", "--quiet", "--no-report", "--out", str(out)]
    made = cli(*first, "--configs", "plain,tls1.2", "--duration", "1", "--rate", "5", "--reps", "1")
    assert made.returncode == 0, made.stderr
    resumed = cli("run", "--simulate", "--quiet", "--no-report", "--resume", "--out", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert "2 kept" in resumed.stdout
    extended = cli(*first, "--resume", "--reps", "2", "--rate", "5")  # agrees: extends
    assert extended.returncode == 0, extended.stderr
    assert "2 runs executed, 2 kept" in extended.stdout
    differing = cli(*first, "--resume", "--duration", "3")
    assert differing.returncode == 2
    line = differing.stderr.strip()
    assert "\n" not in line and "--duration" in line and "1.0" in line and "3.0" in line
    spec_file = tmp_path / "other.toml"
    spec_file.write_text('configurations = ["plain", "tls1.3"]\nduration_s = 1\nrate_hz = [5]\n')
    from_file = cli(*first, "--resume", str(spec_file))
    assert from_file.returncode == 2 and "configurations in" in from_file.stderr
