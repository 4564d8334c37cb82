"""Rebuilding a results database from the per-run record files (``iotsecbench db rebuild``).

The database is a cache of ``experiment.json`` and ``runs/*/record.json``: every run's record
is written before its transaction, so these files hold everything the database held. Rebuild
reads and checks all of them first, builds a fresh database under a temporary name, and only
then sets the old ``results.duckdb`` (and its WAL) aside under a timestamped name — nothing is
ever deleted, and a failed rebuild leaves the directory as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from iotsecbench.errors import DataError, EnvironmentProblem, SpecError, StoreBusyError
from iotsecbench.store import migrations, schema
from iotsecbench.store.directory import DirectoryLock
from iotsecbench.store.duckdb_store import (
    DB_FILENAME,
    EXPERIMENT_FILENAME,
    EXPERIMENT_FORMAT,
    RECORD_FILENAME,
    RECORD_FORMAT,
    RUNS_DIRNAME,
    WAL_SUFFIX,
    ResultsStore,
    connect,
    database_path,
    to_arrow,
    utc_stamp,
)


def rebuild(results_dir: Path | str) -> int:
    """Recreate ``results_dir/results.duckdb`` from the record files; return runs restored.

    The previous database and WAL are renamed to ``results.duckdb.aside-<UTC time>`` and
    ``results.duckdb.wal.aside-<UTC time>``.
    """
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise SpecError(f"{results_dir} is not a directory")
    if not any(
        (results_dir / name).exists() for name in (EXPERIMENT_FILENAME, RUNS_DIRNAME, DB_FILENAME)
    ):
        raise SpecError(
            f"{results_dir} is not a results directory (no {EXPERIMENT_FILENAME}, "
            f"{RUNS_DIRNAME}/ or {DB_FILENAME}): pass the --out directory of an iotsecbench run"
        )
    experiment = _read_experiment(results_dir)
    record_paths = sorted(results_dir.glob(f"{RUNS_DIRNAME}/*/{RECORD_FILENAME}"))
    # Check every record before changing anything, but keep none in memory: a long experiment's
    # records together can exceed RAM, so the building pass reads each one again.
    for record_path in record_paths:
        read_record(record_path)
    with DirectoryLock(results_dir):
        return _rebuild_locked(results_dir, experiment, record_paths)


def _rebuild_locked(results_dir: Path, experiment: dict[str, Any], record_paths: list[Path]) -> int:
    path = database_path(results_dir)
    _refuse_if_busy(path)

    stamp = utc_stamp()
    building = results_dir / f".{path.name}.rebuild-{stamp}"
    try:
        with ResultsStore.open_file(building) as store:
            store.restore_experiment(to_arrow(schema.EXPERIMENTS, [experiment]))
            for record_path in record_paths:
                record = read_record(record_path)
                store.restore_run(record["run_id"], record["run"], record["tables"])
    except BaseException:
        for leftover in (building, building.with_name(building.name + WAL_SUFFIX)):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()  # our own half-built file, never the user's data
        raise

    wal = path.with_name(path.name + WAL_SUFFIX)
    for current in (path, wal):
        if current.exists():
            os.replace(current, current.with_name(f"{current.name}.aside-{stamp}"))
    os.replace(building, path)
    return len(record_paths)


@dataclass(frozen=True)
class StoreCheck:
    """What ``iotsecbench db check`` found: the database against the per-run records."""

    runs_in_database: int
    records: int
    not_in_database: tuple[str, ...]  # run ids whose record.json has no matching runs row
    without_record: tuple[str, ...]  # run ids in the database with no record.json

    @property
    def consistent(self) -> bool:
        return not self.not_in_database and not self.without_record


def check(results_dir: Path | str) -> StoreCheck:
    """Open the database read-only and compare its runs with every ``record.json``.

    Raises what opening raises (DataError for a damaged database, StoreBusyError while a
    writer holds it) and DataError for an unreadable record; changes nothing.
    """
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise SpecError(f"{results_dir} is not a directory")
    with ResultsStore.open(results_dir, read_only=True) as store:
        stored = dict(store.connection.execute("SELECT run_id, status FROM runs").fetchall())
        # Read every page once: a damaged page is found only when a query reads it.
        for name in schema.TABLES:
            for _ in store.connection.sql(f"SELECT * FROM {name}").to_arrow_reader(1 << 16):
                pass
    recorded = {}
    for record_path in sorted(results_dir.glob(f"{RUNS_DIRNAME}/*/{RECORD_FILENAME}")):
        run = read_record(record_path)["run"]
        recorded[run.column("run_id")[0].as_py()] = run.column("status")[0].as_py()
    return StoreCheck(
        runs_in_database=len(stored),
        records=len(recorded),
        not_in_database=tuple(
            sorted(run_id for run_id, status in recorded.items() if stored.get(run_id) != status)
        ),
        without_record=tuple(sorted(set(stored) - set(recorded))),
    )


def restore_completed(store: ResultsStore, experiment_id: str) -> list[str]:
    """Put back every ``ok`` run of the experiment whose record exists but whose row does not.

    A signal between a run's record and its transaction leaves exactly this state; --resume
    calls this first so such a run is restored from its record, never measured again.
    Returns the run ids restored. An unreadable record raises DataError naming the file.
    """
    in_database = store.completed_run_ids(experiment_id)
    restored = []
    for record_path in sorted(store.results_dir.glob(f"{RUNS_DIRNAME}/*/{RECORD_FILENAME}")):
        if record_path.parent.name in in_database:
            continue  # the directory is named after the run id: skip without reading
        record = read_record(record_path)
        run = record["run"]
        if (
            run.column("status")[0].as_py() != "ok"
            or run.column("experiment_id")[0].as_py() != experiment_id
            or record["run_id"] in in_database
        ):
            continue
        store.restore_run(record["run_id"], run, record["tables"])
        restored.append(record["run_id"])
    return restored


def _refuse_if_busy(path: Path) -> None:
    """A running writer must not have its database renamed under it."""
    if not path.exists():
        return
    try:
        connection = connect(path, read_only=True)
    except StoreBusyError as error:
        raise StoreBusyError(f"cannot rebuild now: {error}") from error
    except (DataError, EnvironmentProblem):
        return  # corrupt or unreadable: exactly what rebuild is for
    connection.close()


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(
            f"{path} is unreadable ({error}); move its directory aside and rerun the rebuild"
        ) from error


def _check_version(document: Any, path: Path, expected_format: str) -> None:
    if not isinstance(document, dict) or document.get("format") != expected_format:
        raise DataError(f"{path} is not an {expected_format}")
    version = document.get("schema_version")
    if not isinstance(version, int):
        raise DataError(f"{path} has no integer schema_version")
    migrations.check_readable(version, str(path))
    if version != schema.SCHEMA_VERSION and version not in migrations.RECORDS_READABLE_AS_CURRENT:
        # Record files are rows of their own schema version; upgrading them needs row-level
        # steps that no schema change has required yet.
        raise DataError(
            f"{path} uses results schema version {version}; this iotsecbench rebuilds only "
            f"from version {schema.SCHEMA_VERSION} records"
        )


def _read_experiment(results_dir: Path) -> dict[str, Any]:
    path = results_dir / EXPERIMENT_FILENAME
    if not path.is_file():
        raise DataError(
            f"{path} is missing: it is written when an experiment starts and rebuild needs it"
        )
    document = _load_json(path)
    _check_version(document, path, EXPERIMENT_FORMAT)
    experiment = document.get("experiment")
    if not isinstance(experiment, dict):
        raise DataError(f"{path} holds no experiment row")
    try:
        to_arrow(schema.EXPERIMENTS, [experiment])
    except ValueError as error:
        raise DataError(f"{path}: {error}") from error
    return experiment


def read_record(path: Path) -> dict[str, Any]:
    """Load and validate one run record into Arrow tables, before anything is changed."""
    document = _load_json(path)
    _check_version(document, path, RECORD_FORMAT)
    run = document.get("run")
    tables = document.get("tables")
    if not isinstance(run, dict) or not run.get("run_id") or not isinstance(tables, dict):
        raise DataError(f"{path} lacks its run row or tables")
    try:
        run, tables = migrations.upgrade_record(document["schema_version"], run, tables)
        run_data = to_arrow(schema.RUNS, [run])
        table_data = {}
        for name in schema.PER_RUN_TABLES:
            columns = tables.get(name) or {}
            if not isinstance(columns, dict):
                raise ValueError(f"table {name} is not column-oriented")
            table_data[name] = _columns_to_arrow(schema.TABLES[name], columns)
    except (ValueError, KeyError, TypeError, pa.ArrowException) as error:
        raise DataError(f"{path}: {error!s}") from error
    unknown = set(tables) - set(schema.PER_RUN_TABLES)
    if unknown:
        raise DataError(f"{path}: unknown table(s) {sorted(unknown)}")
    return {"run_id": run["run_id"], "run": run_data, "tables": table_data}


def _columns_to_arrow(table: schema.Table, columns: dict[str, list[Any]]) -> pa.Table:
    unknown = set(columns) - set(table.column_names)
    if unknown:
        raise ValueError(f"unknown column(s) for table {table.name}: {sorted(unknown)}")
    lengths = {len(values) for values in columns.values()}
    if len(lengths) > 1:
        raise ValueError(f"table {table.name} has columns of different lengths")
    rows = lengths.pop() if lengths else 0
    arrays = [
        pa.array(columns.get(column.name, [None] * rows), type=column.arrow_type)
        for column in table.columns
    ]
    return pa.Table.from_arrays(arrays, schema=table.arrow_schema(schema.SCHEMA_VERSION))
