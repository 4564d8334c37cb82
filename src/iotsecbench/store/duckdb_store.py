"""The DuckDB results store: opening, creating, upgrading, and writing one run at a time.

The runner is the only writer (DuckDB allows one read-write process per file). Each run is
first written to ``runs/<run_id>/record.json`` (temporary name, fsync, rename), then inserted
in one transaction that replaces the run's rows in every table and its ``runs`` row, followed
by a checkpoint — so a crash loses at most the run in flight and ``iotsecbench db rebuild``
can always restore the database from the record files (``docs/reliability.md``).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from iotsecbench.errors import (
    DataError,
    SpecError,
    StoreBusyError,
)
from iotsecbench.files import PRIVATE_FILE_MODE, storage_problem, write_atomic
from iotsecbench.store import migrations, schema

DB_FILENAME = "results.duckdb"
WAL_SUFFIX = ".wal"
EXPERIMENT_FILENAME = "experiment.json"
RECORD_FILENAME = "record.json"
RUNS_DIRNAME = "runs"
RECORD_FORMAT = "iotsecbench run record"
EXPERIMENT_FORMAT = "iotsecbench experiment record"

# DuckDB reports a held lock at once; we retry briefly so a process that is just closing the
# database does not make the caller fail, and still answer well within the 2 s promise.
BUSY_WAIT_S = 1.5
BUSY_RETRY_INTERVAL_S = 0.1

_LOCK_PATTERN = re.compile(r"Could not set lock|Conflicting lock", re.IGNORECASE)
_PID_PATTERN = re.compile(r"held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


def utc_stamp() -> str:
    """Compact UTC timestamp for file names that set things aside (sortable, no colons)."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def database_path(results_dir: Path) -> Path:
    return Path(results_dir) / DB_FILENAME


def _json_default(value: Any) -> Any:
    # numpy scalars and arrays reach us from the energy model; anything else is a bug upstream.
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return value.as_posix()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps(value: Any) -> str:
    """Deterministic JSON text (sorted keys) used for records and *_json columns."""
    return json.dumps(value, sort_keys=True, default=_json_default, ensure_ascii=False)


def atomic_write_text(path: Path, text: str) -> None:
    """Write a record (``record.json``, ``experiment.json``) so that ``path`` holds either the
    old or the complete new content; 0600, like the rest of a run."""
    write_atomic(path, text, mode=PRIVATE_FILE_MODE)


def _environment_error(error: OSError | duckdb.Error, action: str) -> Exception:
    """Map disk-full and permission problems to exit-3 errors; return others unchanged."""
    return storage_problem(error, action) or error


# DuckDB's errors for a file it cannot read as a database (truncated, overwritten): they
# may surface at any query, long after the file was opened.
_DAMAGE = (duckdb.IOException, duckdb.InternalException, duckdb.SerializationException)


def _was_interrupted(error: BaseException) -> bool:
    """DuckDB turns a Ctrl-C during a query into an error of its own ("Query interrupted"):
    it is an interruption (exit 130), never damage or a bug."""
    return isinstance(error, (duckdb.InterruptException, RuntimeError)) and (
        "interrupted" in str(error).lower()
    )


def _store_error(path: Path, error: duckdb.Error, action: str) -> Exception:
    """A DuckDB error on ``path``: the environment's (exit 3), damage (exit 4, naming
    ``db rebuild``), or unchanged (a bug)."""
    mapped = _environment_error(error, action)
    if mapped is not error:
        return mapped
    if isinstance(error, _DAMAGE):
        return _corrupt(path, str(error))
    return error


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


# --- row validation and conversion -------------------------------------------------------


def _check_columns(table: schema.Table, keys: Iterable[str]) -> None:
    unknown = sorted(set(keys) - set(table.column_names))
    if unknown:
        # A caller passing a column the schema does not have is a programming error.
        raise ValueError(f"unknown column(s) for table {table.name}: {', '.join(unknown)}")


def to_arrow(
    table: schema.Table, rows: list[Mapping[str, Any]], defaults: Mapping[str, Any] | None = None
) -> pa.Table:
    """Validate rows against ``table`` and build an Arrow table (missing columns are NULL).

    ``defaults`` fills columns a row leaves out or sets to None (write_run uses it for
    ``run_id``). JSON columns accept dicts and lists and store them as sorted-key JSON text.
    """
    names = frozenset(table.column_names)
    for row in rows:
        if not row.keys() <= names:
            _check_columns(table, row.keys())
    json_columns = [column.name for column in table.columns if column.is_json]
    if json_columns:
        rows = [_serialise_json(row, json_columns) for row in rows]
    struct_type = pa.struct([pa.field(c.name, c.arrow_type) for c in table.columns])
    try:
        # One C++ conversion of the whole list of dicts: ~10x faster than column by column
        # in Python, which matters for the ~100k message rows of a long run.
        arrays = pa.array(rows, type=struct_type).flatten()
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        arrays = _convert_by_column(table, rows)  # slower, but names the offending column
    for index, column in enumerate(table.columns):
        default = (defaults or {}).get(column.name)
        if default is not None and arrays[index].null_count:
            arrays[index] = pc.fill_null(arrays[index], pa.scalar(default, column.arrow_type))
        _check_values(table, column, arrays[index])
    return pa.Table.from_arrays(arrays, schema=table.arrow_schema(schema.SCHEMA_VERSION))


def _serialise_json(row: Mapping[str, Any], json_columns: list[str]) -> Mapping[str, Any]:
    changed = {
        name: dumps(row[name])
        for name in json_columns
        if row.get(name) is not None and not isinstance(row[name], str)
    }
    return {**row, **changed} if changed else row


def _convert_by_column(table: schema.Table, rows: list[Mapping[str, Any]]) -> list[pa.Array]:
    arrays = []
    for column in table.columns:
        try:
            arrays.append(pa.array([row.get(column.name) for row in rows], type=column.arrow_type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as error:
            raise ValueError(
                f"table {table.name}, column {column.name} ({column.sql_type}): {error}"
            ) from error
    return arrays


def _check_values(table: schema.Table, column: schema.Column, array: pa.Array) -> None:
    if column.required and array.null_count:
        raise ValueError(f"table {table.name}, column {column.name} must not be NULL")
    if column.allowed is not None:
        bad = set(array.drop_null().unique().to_pylist()) - set(column.allowed)
        if bad:
            raise ValueError(
                f"table {table.name}, column {column.name}: {sorted(bad)} not in "
                f"{list(column.allowed)}"
            )


def _check_run_ids(table: schema.Table, data: pa.Table, run_id: str) -> None:
    other = set(data.column("run_id").unique().to_pylist()) - {run_id}
    if other:
        raise ValueError(f"table {table.name} holds rows of other run(s): {sorted(other)}")


# --- the store ------------------------------------------------------------------------------


class ResultsStore:
    """A results directory's DuckDB database, opened for reading or for the single writer."""

    def __init__(self, path: Path, connection: duckdb.DuckDBPyConnection, read_only: bool) -> None:
        self.path = Path(path)
        self.results_dir = self.path.parent
        self.read_only = read_only
        self._connection: duckdb.DuckDBPyConnection | None = connection

    # -- opening ------------------------------------------------------------------------

    @classmethod
    def open(cls, results_dir: Path | str, read_only: bool = False) -> ResultsStore:
        """Open (and, for a writer, create) ``results_dir/results.duckdb``.

        Raises StoreBusyError when another process holds the database, DataError when it is
        corrupt, from a newer iotsecbench, or not an iotsecbench database, and SpecError when
        a reader is pointed at a directory without results.
        """
        results_dir = Path(results_dir)
        return cls.open_file(database_path(results_dir), read_only=read_only)

    @classmethod
    def open_file(cls, path: Path, read_only: bool = False) -> ResultsStore:
        """Open a results database at an explicit path (``open`` and rebuild use it)."""
        try:
            return cls._open_file(path, read_only)
        except (duckdb.Error, RuntimeError) as error:
            if _was_interrupted(error):
                raise KeyboardInterrupt from None
            raise

    @classmethod
    def _open_file(cls, path: Path, read_only: bool) -> ResultsStore:
        results_dir = path.parent
        if read_only:
            if not path.is_file():
                raise SpecError(
                    f"no results database in {results_dir} (expected {path}); "
                    "pass the --out directory of an iotsecbench run"
                )
        else:
            try:
                results_dir.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise _environment_error(error, f"creating {results_dir}") from error
        wal_copy = None if read_only else _keep_copy_of_wal(path)
        try:
            connection = connect(path, read_only)
        except StoreBusyError:
            # The WAL belonged to the live writer, not to a crashed one: the copy is noise.
            if wal_copy is not None:
                wal_copy.unlink(missing_ok=True)
            raise
        try:
            version = _prepare_schema(connection, path, read_only)
        except BaseException:
            connection.close()
            raise
        if version < schema.SCHEMA_VERSION:
            connection.close()
            _upgrade_file(path)
            connection = connect(path, read_only)
        return cls(path, connection, read_only)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
        if isinstance(exc, (duckdb.Error, RuntimeError)) and _was_interrupted(exc):
            raise KeyboardInterrupt from None  # a Ctrl-C, whatever DuckDB made of it
        if isinstance(exc, duckdb.Error):
            # A damaged page is found when a query reads it, not when the file is opened:
            # whoever queried, the same one line (exit 4 with the `db rebuild` hint).
            mapped = _store_error(self.path, exc, f"reading {self.path}")
            if mapped is not exc:
                raise mapped from exc

    def close(self) -> None:
        """Close the connection (DuckDB checkpoints a read-write database on close)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The underlying DuckDB connection, for readers that need their own SQL."""
        if self._connection is None:
            raise RuntimeError("the results store is closed")
        return self._connection

    def _require_writer(self) -> duckdb.DuckDBPyConnection:
        if self.read_only:
            raise RuntimeError("the results store was opened read-only")
        return self.connection

    # -- experiments ------------------------------------------------------------------

    def ensure_experiment(self, row: dict[str, Any], resume: bool) -> str:
        """Record the experiment, or check that a resumed run continues the same one.

        Returns the experiment_id in effect: the stored one when resuming (so a runner that
        generated a fresh id keeps adding runs to the experiment it resumes).
        """
        connection = self._require_writer()
        data = to_arrow(schema.EXPERIMENTS, [row])
        if not row.get("experiment_id") or not row.get("config_hash"):
            raise ValueError("experiment row needs experiment_id and config_hash")
        existing = connection.execute(
            "SELECT experiment_id, config_hash FROM experiments ORDER BY created_utc"
        ).fetchall()
        if len(existing) > 1:
            raise DataError(
                f"{self.results_dir} holds {len(existing)} experiments; iotsecbench keeps one "
                "experiment per results directory — use a new --out"
            )
        experiment_file = self.results_dir / EXPERIMENT_FILENAME
        if existing:
            stored_id, stored_hash = existing[0]
            if not resume:
                raise SpecError(
                    f"{self.results_dir} already holds results of experiment {stored_id}; "
                    "use --resume to continue it or a new --out"
                )
            if stored_hash != row["config_hash"]:
                raise SpecError(
                    f"results in {self.results_dir} were made with a different experiment "
                    f"configuration (config hash {stored_hash} ≠ {row['config_hash']}); "
                    "use a new --out or --force-new-run"
                )
            if not experiment_file.exists():
                # Restore the rebuild source from the database rather than from the new row,
                # so created_utc and host facts stay those of the original start.
                self._write_experiment_file(self.experiment() or {})
            return str(stored_id)
        record_row = data.to_pylist()[0]
        self._write_experiment_file(record_row)
        self._insert(connection, schema.EXPERIMENTS, data, "recording the experiment")
        return str(row["experiment_id"])

    def _write_experiment_file(self, row: dict[str, Any]) -> None:
        document = {
            "format": EXPERIMENT_FORMAT,
            "schema_version": schema.SCHEMA_VERSION,
            "experiment": row,
        }
        path = self.results_dir / EXPERIMENT_FILENAME
        try:
            atomic_write_text(path, dumps(document))
        except OSError as error:
            raise _environment_error(error, f"writing {path}") from error

    def experiment(self) -> dict[str, Any] | None:
        """The stored experiment row, or None before ensure_experiment."""
        cursor = self.connection.execute("SELECT * FROM experiments")
        names = [description[0] for description in cursor.description]
        # fetchall, not fetchone: DuckDB 2 refuses new work on a connection with a result left open.
        rows = cursor.fetchall()
        return dict(zip(names, rows[0], strict=True)) if rows else None

    # -- runs --------------------------------------------------------------------------

    def completed_run_ids(self, experiment_id: str) -> set[str]:
        """Runs of the experiment that finished with status 'ok' (resume skips them)."""
        rows = self.connection.execute(
            "SELECT run_id FROM runs WHERE experiment_id = ? AND status = 'ok'", [experiment_id]
        ).fetchall()
        return {run_id for (run_id,) in rows}

    def write_run(
        self, run_row: dict[str, Any], tables: dict[str, list[dict[str, Any]]], run_dir: Path
    ) -> None:
        """Persist one finished (or failed) run: record file first, then one transaction.

        Unknown tables or columns raise ValueError (a bug in the caller); missing columns
        are NULL; rows without ``run_id`` get the run's id. Writing a run again replaces it.
        """
        self._require_writer()  # refuse a read-only store before validating anything
        run_dir = Path(run_dir)
        run_id = run_row.get("run_id")
        if not run_id:
            raise ValueError("run row needs a run_id")
        run_row = dict(run_row)
        if run_row.get("run_dir") is None:
            run_row["run_dir"] = _relative_to(run_dir, self.results_dir)
        unknown_tables = sorted(set(tables) - set(schema.PER_RUN_TABLES))
        if unknown_tables:
            raise ValueError(
                f"unknown per-run table(s) {unknown_tables}; expected {list(schema.PER_RUN_TABLES)}"
            )
        run_data = to_arrow(schema.RUNS, [run_row])
        table_data = {}
        for name in schema.PER_RUN_TABLES:
            table = schema.TABLES[name]
            data = to_arrow(table, tables.get(name, []), defaults={"run_id": run_id})
            _check_run_ids(table, data, run_id)
            table_data[name] = data

        self.replace_run(run_dir, run_id, run_data, table_data)

    def replace_run(
        self, run_dir: Path, run_id: str, run_data: pa.Table, table_data: Mapping[str, pa.Table]
    ) -> None:
        """Store validated tables of a run: its record file first (atomically), then one
        transaction — write_run for a finished run, store.amend for additions to it."""
        connection = self._require_writer()
        record = {
            "format": RECORD_FORMAT,
            "schema_version": schema.SCHEMA_VERSION,
            "run": run_data.to_pylist()[0],
            # Column-oriented: compact and fast for ~100k message rows; rebuild reads it back.
            "tables": {name: data.to_pydict() for name, data in table_data.items()},
        }
        record_path = Path(run_dir) / RECORD_FILENAME
        try:
            atomic_write_text(record_path, dumps(record))
        except OSError as error:
            raise _environment_error(error, f"writing {record_path}") from error
        self._replace_run(connection, run_id, run_data, table_data)

    def restore_experiment(self, data: pa.Table) -> None:
        """Insert a validated experiment row without touching experiment.json (rebuild)."""
        self._insert(self._require_writer(), schema.EXPERIMENTS, data, "restoring the experiment")

    def restore_run(
        self, run_id: str, run_data: pa.Table, table_data: Mapping[str, pa.Table]
    ) -> None:
        """Insert a validated run without rewriting its record file (rebuild)."""
        self._replace_run(self._require_writer(), run_id, run_data, table_data)

    def _replace_run(
        self,
        connection: duckdb.DuckDBPyConnection,
        run_id: str,
        run_data: pa.Table,
        table_data: Mapping[str, pa.Table],
    ) -> None:
        action = f"writing run {run_id} to {self.path}"
        try:
            with migrations.transaction(connection):
                for name in (*schema.PER_RUN_TABLES, "runs"):
                    connection.execute(f"DELETE FROM {name} WHERE run_id = ?", [run_id])
                for name, data in table_data.items():
                    if data.num_rows:
                        _insert_arrow(connection, schema.TABLES[name], data)
                # The runs row goes last: its presence is what marks the run as stored.
                _insert_arrow(connection, schema.RUNS, run_data)
        except duckdb.Error as error:
            raise _environment_error(error, action) from error

    def _insert(
        self,
        connection: duckdb.DuckDBPyConnection,
        table: schema.Table,
        data: pa.Table,
        action: str,
    ) -> None:
        try:
            with migrations.transaction(connection):
                _insert_arrow(connection, table, data)
        except duckdb.Error as error:
            raise _environment_error(error, f"{action} in {self.path}") from error


def _insert_arrow(
    connection: duckdb.DuckDBPyConnection, table: schema.Table, data: pa.Table
) -> None:
    # Registering the Arrow table lets DuckDB bulk-copy it: thousands of times faster than
    # row-by-row INSERTs for the ~100k message rows a long run produces.
    view = f"_incoming_{table.name}"
    columns = ", ".join(table.column_names)
    connection.register(view, data)
    try:
        connection.execute(f"INSERT INTO {table.name} ({columns}) SELECT {columns} FROM {view}")
    finally:
        connection.unregister(view)


def _relative_to(run_dir: Path, results_dir: Path) -> str:
    try:
        return run_dir.resolve().relative_to(results_dir.resolve()).as_posix()
    except ValueError:
        # A run directory outside the results directory is recorded as given.
        return run_dir.as_posix()


# --- opening helpers --------------------------------------------------------------------------


def _keep_copy_of_wal(path: Path) -> Path | None:
    """Copy a leftover WAL aside before DuckDB replays (or silently discards) it.

    Every write ends with a checkpoint, so a non-empty WAL means the last writer died; DuckDB
    drops a WAL it cannot replay without an error, so this copy is the only evidence kept.
    Returns the copy's path, or None when there was nothing to keep.
    """
    wal = path.with_name(path.name + WAL_SUFFIX)
    copy = wal.with_name(f"{wal.name}.kept-{utc_stamp()}")
    try:
        if not (wal.is_file() and wal.stat().st_size > 0):
            return None
        shutil.copy2(wal, copy)
        return copy
    except OSError as error:
        # A copy cut short (disk full) is no evidence, and an empty one misleads: remove it.
        with contextlib.suppress(OSError):
            copy.unlink(missing_ok=True)
        raise _environment_error(error, f"keeping a copy of {wal}") from error


def connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + BUSY_WAIT_S
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.Error as error:
            text = str(error)
            if _LOCK_PATTERN.search(text):
                if time.monotonic() < deadline:
                    time.sleep(BUSY_RETRY_INTERVAL_S)
                    continue
                raise StoreBusyError(_busy_message(path, text)) from error
            if isinstance(error, duckdb.ConnectionException) and "different configuration" in text:
                raise StoreBusyError(
                    f"results DB {path} is already open in this process in another mode"
                ) from error
            mapped = _environment_error(error, f"opening {path}")
            if mapped is not error:
                raise mapped from error
            raise _corrupt(path, text) from error


def _busy_message(path: Path, text: str) -> str:
    match = _PID_PATTERN.search(text)
    holder = f"PID {match['pid']} ({Path(match['program']).name})" if match else "another process"
    return f"results DB {path} in use by {holder}; wait for it to finish or use another --out"


def _corrupt(path: Path, text: str) -> DataError:
    return DataError(
        f"results DB {path} cannot be read ({_first_line(text)}); run "
        f"`iotsecbench db rebuild {path.parent}` to set it aside and rebuild it from the "
        "per-run records"
    )


def _prepare_schema(connection: duckdb.DuckDBPyConnection, path: Path, read_only: bool) -> int:
    """Create the schema in a new database, or check an existing one; return its version."""
    try:
        existing = {
            name
            for (name,) in connection.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
            ).fetchall()
        }
        if not existing:
            if read_only:
                raise DataError(f"results DB {path} is empty (no iotsecbench tables)")
            create_schema(connection)
            return schema.SCHEMA_VERSION
        if "meta" not in existing:
            raise DataError(f"{path} is not an iotsecbench results database (no meta table)")
        row = _schema_version_row(connection)
    except duckdb.Error as error:
        # Creating the tables on a full disk is not damage: exit 3, not the rebuild hint.
        mapped = _environment_error(error, f"preparing {path}")
        raise (mapped if mapped is not error else _corrupt(path, str(error))) from error
    if row is None or not str(row[0]).lstrip("-").isdigit():
        raise DataError(f"results DB {path} has no valid schema_version in its meta table")
    version = int(row[0])
    migrations.check_readable(version, f"results DB {path}")
    if version == schema.SCHEMA_VERSION:
        missing = sorted(set(schema.TABLES) - existing)
        if missing:
            raise DataError(
                f"results DB {path} lacks table(s) {', '.join(missing)}; run "
                f"`iotsecbench db rebuild {path.parent}`"
            )
    else:
        # Fail now, before any copy is made, when no migration path exists.
        migrations.steps_from(version, f"results DB {path}")
    return version


def _schema_version_row(connection: duckdb.DuckDBPyConnection) -> tuple[Any, ...] | None:
    rows = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    return rows[0] if rows else None


def create_schema(connection: duckdb.DuckDBPyConnection) -> None:
    """Create every table and record the schema version, in one transaction."""
    try:
        created_by = metadata.version("iotsecbench")
    except metadata.PackageNotFoundError:
        created_by = "unknown"
    with migrations.transaction(connection):
        for table in schema.TABLES.values():
            connection.execute(table.ddl())
        connection.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [
                ["schema_version", str(schema.SCHEMA_VERSION)],
                ["created_utc", datetime.now(UTC).isoformat()],
                ["created_by", f"iotsecbench {created_by}"],
            ],
        )


def _upgrade_file(path: Path) -> None:
    """Upgrade an older database in place, after keeping a copy of the original file."""
    connection = connect(path, read_only=False)
    try:
        row = _schema_version_row(connection)
        version = int(row[0]) if row else 0
        if version >= schema.SCHEMA_VERSION:
            return  # another process upgraded it meanwhile
        connection.execute("CHECKPOINT")
        backup = path.with_name(f"{path.name}.v{version}-{utc_stamp()}")
        # DuckDB keeps no state outside the file after a checkpoint, so a copy is consistent.
        shutil.copy2(path, backup)
        migrations.upgrade(connection, version, f"results DB {path}")
    finally:
        connection.close()
