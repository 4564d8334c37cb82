"""Reading results back as pandas frames, for the analysis and the report.

Every function opens the database read-only for the duration of one query, so it works
whenever no writer holds the file (DuckDB lets a writer exclude every other process) —
unless the caller reads inside ``reading(results_dir)``: then every read shares one
read-only connection (a summary or a report reads a dozen tables, and each opening of the
file costs DuckDB ~35 ms of CPU).
Frames come back in a deterministic order; integer columns that may hold NULLs use pandas'
nullable integer dtypes so NULL stays distinguishable from 0.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import pandas as pd

from iotsecbench import signals
from iotsecbench.errors import DataError, SpecError
from iotsecbench.files import read_json
from iotsecbench.store import schema
from iotsecbench.store.duckdb_store import ResultsStore, database_path


def stored_document(path: Path) -> dict[str, Any] | None:
    """A JSON document the runner stored beside the database (``experiment.json``): None
    when absent, DataError (exit 4) naming the file when it is not a JSON object."""
    path = Path(path)
    if not path.exists():
        return None
    document = read_json(path)
    if not isinstance(document, dict):
        raise DataError(f"{path} is not a JSON object; restore it, or move it aside")
    return document


# The store every read of its directory shares inside ``reading`` (None: each read opens its own).
_READING: ContextVar[ResultsStore | None] = ContextVar("reading", default=None)


@contextlib.contextmanager
def reading(results_dir: Path | str) -> Iterator[None]:
    """Every read of ``results_dir`` inside shares one read-only connection, opened here and
    closed on leaving (a nested scope of the same directory shares the outer one). Write
    nothing to the store inside: DuckDB refuses a writer beside a reader in one process."""
    if _shared(results_dir) is not None:
        yield
        return
    with ResultsStore.open(results_dir, read_only=True) as store:
        token = _READING.set(store)
        try:
            yield
        finally:
            _READING.reset(token)


def _shared(results_dir: Path | str) -> ResultsStore | None:
    store = _READING.get()
    if store is None or store.path.resolve() != database_path(Path(results_dir)).resolve():
        return None
    return store


def _query(results_dir: Path | str, sql: str, parameters: list[Any] | None = None) -> pd.DataFrame:
    store = _shared(results_dir)
    # signals.kept: a Ctrl-C during the query stops the command, whatever DuckDB made of it
    if store is not None:  # a DuckDB error reaches the scope's ResultsStore, which maps it
        with signals.kept():
            return store.connection.execute(sql, parameters or []).df()
    with ResultsStore.open(results_dir, read_only=True) as store, signals.kept():
        return store.connection.execute(sql, parameters or []).df()


# A fleet's device 0 (and every row of a run without a fleet, NULL before schema 7): the
# one device whose time series the analysis and the per-device summary read.
FIRST_DEVICE = "coalesce(device_index, 0) = 0"


def table(
    results_dir: Path | str, name: str, run_id: str | None = None, *, first_device: bool = False
) -> pd.DataFrame:
    """Every row of one table, or of one run when ``run_id`` is given (columns in schema
    order, rows in the table's natural order); ``first_device``: a fleet's device 0 only
    (and the broker's samples, which belong to no device, left out)."""
    if name not in schema.DATA_TABLES:
        raise SpecError(
            f"unknown results table {name!r}; the tables are {', '.join(schema.DATA_TABLES)}"
        )
    definition = schema.TABLES[name]
    columns = ", ".join(definition.column_names)
    order = ", ".join(definition.order_by) or columns
    conditions = ["run_id = ?"] if run_id is not None else []
    if first_device and "device_index" in definition.column_names:
        conditions.append(FIRST_DEVICE)
        if name == "samples":
            conditions.append("agent <> 'broker'")
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return _query(
        results_dir,
        f"SELECT {columns} FROM {name}{where} ORDER BY {order}",
        [run_id] if run_id is not None else None,
    )


# A benchmark connection's three phases in the shape of a handshakes row: the benchmark's
# client is the device, so its phases are the emitter's.
_CONNECTION_PHASES = (
    ("tcp_connect", "t_start_ns", "t_start_ns + tcp_connect_ns", "tcp_connect_cpu_ns",
     "json_object('repetition', repetition)"),
    ("tls_handshake", "tls_start_ns", "tls_end_ns", "tls_cpu_ns",
     "json_object('repetition', repetition, 'tcp_bytes_sent', tcp_bytes_sent, "
     "'tcp_bytes_received', tcp_bytes_received)"),
    ("mqtt_connect", "t_ready_ns", "t_connack_ns", "mqtt_connect_cpu_ns",
     "json_object('repetition', repetition)"),
)  # fmt: skip


def handshake_phases(results_dir: Path | str, *, first_device: bool = False) -> pd.DataFrame:
    """Every connection's set-up phases, as ``handshakes`` rows: the agents' (a fleet's device
    0 with ``first_device``) and each ``bench handshake`` connection's TCP connect, TLS
    handshake and MQTT connect (agent 'emitter'; detail: its repetition and, for the TLS
    handshake, the TCP bytes each way) timed on this host — not those counted on a device
    target, whose cost is instructions, not host time. Columns and order as in
    ``handshakes``."""
    columns = schema.HANDSHAKES.column_names
    agents = ", ".join(columns)
    where = f" WHERE {FIRST_DEVICE}" if first_device else ""
    benchmark = " UNION ALL ".join(
        f"SELECT run_id, 'emitter', '{phase}', {start}, {end}, ({end}) - ({start}), {cpu}, "
        f"CAST({detail} AS VARCHAR), 0 FROM handshake_connections WHERE target IS NULL"
        for phase, start, end, cpu, detail in _CONNECTION_PHASES
    )
    order = ", ".join(schema.HANDSHAKES.order_by)
    return _query(
        results_dir,
        f"SELECT {agents} FROM handshakes{where} UNION ALL {benchmark} ORDER BY {order}",
    )


def require_completed_runs(results_dir: Path | str) -> None:
    """DataError (exit 4) unless at least one run finished ``ok``: ``analyze`` and ``report``
    both refuse, with this same line, a directory whose runs were all interrupted or failed."""
    counts = dict(
        _query(results_dir, "SELECT status, count(*) AS n FROM runs GROUP BY status").itertuples(
            index=False
        )
    )
    if counts.get("ok"):
        return
    others = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no runs"
    raise DataError(
        f"{results_dir} holds no completed run ({others}): nothing to analyse or report; "
        f"continue it with `iotsecbench run --resume --out {results_dir}`"
    )


def runs_frame(results_dir: Path | str) -> pd.DataFrame:
    """The runs table (every status), in run order."""
    return table(results_dir, "runs")


def require_runs(results_dir: Path | str) -> pd.DataFrame:
    """The runs table, or DataError (exit 4) when the store holds no run at all: an export
    of any kind refuses it (a failed or interrupted run is still worth exporting)."""
    runs = runs_frame(results_dir)
    if runs.empty:
        raise DataError(
            f"{results_dir} holds no runs: nothing to export; "
            f"continue it with `iotsecbench run --resume --out {results_dir}`"
        )
    return runs


CURRENT_SOURCES = ("modelled", "measured")


def current_frame(results_dir: Path | str, source: str = "modelled") -> pd.DataFrame:
    """Device current of every sample window of every 'ok' run: ``modelled`` (samples, the
    energy model) or ``measured`` (meter_samples, the power-meter traces attached to runs;
    runs without one are left out). Never a mix of the two.

    Columns: configuration (runs.cell_label), device (the agent: which process's device),
    run (runs.repetition), time_s ((t_ns − runs.t0_ns) / 1e9), current_ma.
    """
    if source not in CURRENT_SOURCES:
        raise SpecError(f"current source {source!r}: choose modelled or measured")
    table = "samples" if source == "modelled" else "meter_samples"
    first_device = f" AND {FIRST_DEVICE}" if source == "modelled" else ""
    return _query(
        results_dir,
        f"""
        SELECT r.cell_label AS configuration,
               s.agent AS device,
               r.repetition AS run,
               (s.t_ns - r.t0_ns) / 1e9 AS time_s,
               s.current_ma AS current_ma
        FROM {table} AS s JOIN runs AS r USING (run_id)
        WHERE r.status = 'ok' AND s.current_ma IS NOT NULL{first_device}
        ORDER BY r.cell_label, s.agent, r.repetition, s.t_ns
        """,
    )


def activity_frames(results_dir: Path | str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the energy model priced in every 'ok' run (a fleet's device 0), for the model's
    range (``analysis.model_range``): the samples' cumulative counters and modelled current
    — run_id, configuration, device (agent), run, t_ns, tcp_bytes_sent, tcp_bytes_received,
    tcp_segs_out, tcp_segs_in, current_ma, cpu_fraction, in time order — and the logged
    operations summed per primitive — run_id, device, primitive, calls, amount."""
    samples = _query(
        results_dir,
        """
        SELECT r.run_id, r.cell_label AS configuration, s.agent AS device,
               r.repetition AS run, s.t_ns, s.tcp_bytes_sent, s.tcp_bytes_received,
               s.tcp_segs_out, s.tcp_segs_in, s.current_ma, s.cpu_fraction
        FROM samples AS s JOIN runs AS r USING (run_id)
        WHERE r.status = 'ok' AND s.current_ma IS NOT NULL AND s.agent <> 'broker'
              AND coalesce(s.device_index, 0) = 0
        ORDER BY r.run_id, s.agent, s.t_ns
        """,
    )
    operations = _query(
        results_dir,
        """
        SELECT o.run_id, o.agent AS device, o.primitive, count(*) AS calls,
               sum(o.amount) AS amount
        FROM operations AS o JOIN runs AS r USING (run_id)
        WHERE r.status = 'ok' AND coalesce(o.device_index, 0) = 0
        GROUP BY o.run_id, o.agent, o.primitive
        ORDER BY o.run_id, o.agent, o.primitive
        """,
    )
    return samples, operations


def workers_frame(results_dir: Path | str) -> pd.DataFrame:
    """Where each 'ok' run ran (``analyze --block-on worker``). Columns: configuration
    (runs.cell_label), run (runs.repetition), worker (runs.worker; 'local' for runs stored
    before schema version 7, which all ran on the experiment's machine)."""
    return _query(
        results_dir,
        """
        SELECT cell_label AS configuration, repetition AS run,
               coalesce(worker, 'local') AS worker
        FROM runs WHERE status = 'ok' ORDER BY run_order
        """,
    )


def measured_against_modelled(results_dir: Path | str) -> pd.DataFrame:
    """Every window with both a measured and a modelled current, for runs with a trace.

    Columns: run_id, configuration, device (agent), run (repetition), time_s,
    measured_ma, modelled_ma.
    """
    return _query(
        results_dir,
        """
        SELECT r.run_id, r.cell_label AS configuration, m.agent AS device,
               r.repetition AS run, (m.t_ns - r.t0_ns) / 1e9 AS time_s,
               m.current_ma AS measured_ma, s.current_ma AS modelled_ma
        FROM meter_samples AS m
        JOIN samples AS s USING (run_id, agent, t_ns)
        JOIN runs AS r USING (run_id)
        WHERE r.status = 'ok'
        ORDER BY r.run_order, m.agent, m.t_ns
        """,
    )


def latency_frame(results_dir: Path | str) -> pd.DataFrame:
    """End-to-end latency of every delivered message of every 'ok' run (a fleet's device 0:
    one time series per run; the fleet's percentiles are runs.latency_p50_ms/p99_ms).

    Columns: configuration (runs.cell_label), run (runs.repetition), seq,
    latency_ms ((t_delivered_ns − t_created_ns) / 1e6).
    """
    return _query(
        results_dir,
        f"""
        SELECT r.cell_label AS configuration,
               r.repetition AS run,
               m.seq AS seq,
               (m.t_delivered_ns - m.t_created_ns) / 1e6 AS latency_ms
        FROM messages AS m JOIN runs AS r USING (run_id)
        WHERE r.status = 'ok' AND m.status = 'delivered' AND {FIRST_DEVICE}
          AND m.t_delivered_ns IS NOT NULL AND m.t_created_ns IS NOT NULL
        ORDER BY r.cell_label, r.repetition, m.seq
        """,
    )


def security_properties(results_dir: Path | str) -> dict[str, dict[str, Any]]:
    """Security properties per cell label, parsed from runs.security_json.

    Every run of a cell has the same properties; the first run (by run order) that recorded
    them is used.
    """
    frame = _query(
        results_dir,
        """
        SELECT cell_label, security_json FROM runs
        WHERE security_json IS NOT NULL AND cell_label IS NOT NULL
        ORDER BY run_order, run_id
        """,
    )
    properties: dict[str, dict[str, Any]] = {}
    for label, text in zip(frame["cell_label"], frame["security_json"], strict=True):
        if label in properties:
            continue
        try:
            properties[label] = json.loads(text)
        except json.JSONDecodeError as error:
            raise DataError(
                f"runs.security_json of cell {label!r} in {results_dir} is not valid JSON ({error})"
            ) from error
    return properties
