"""A run's or an experiment's timeline as Chrome trace-event JSON (``export DIR --timeline``),
which Perfetto's UI (ui.perfetto.dev) and chrome://tracing open.

Format: the JSON Object Format of Google's "Trace Event Format" document (Duerig, Sonnen et
al., 2016): ``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``;
complete events (``ph`` X) for the handshake phases and each message's seal and open, nestable
async events (b/e) for its transport (messages in flight overlap), counter events (C) for the
10 Hz samples and a meter's measured current, instant events (i) for the agents' events, and
metadata events (M) naming each run (a process) and each track (a thread).

Time: every ``ts`` is the lab's one clock, CLOCK_MONOTONIC (``time.monotonic_ns``, shared by
every process and namespace of the host), in microseconds as the format wants them, not moved
to zero, so a timeline of two runs shows them where they happened. Nothing is computed here
that the store does not hold: a slice is two stored timestamps, a counter a stored sample.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from iotsecbench import __version__
from iotsecbench.analysis import metrics
from iotsecbench.errors import SpecError
from iotsecbench.report.data import counted, device_instructions_per_s
from iotsecbench.store import read

FORMAT = "timeline"
FILE_NAME = "timeline.json"
# Tables a timeline reads, besides runs (a table a store does not have reads as empty);
# "handshakes" are every connection's phases, the agents' and the benchmark's
# (store.read.handshake_phases).
HANDSHAKES = "handshakes"
TABLES = ("messages", "samples", "meter_samples", "events", "handshake_groups")
# The 10 Hz samples' counters: column → the counter's name in the viewer (unit in the name).
SAMPLE_COUNTERS = {
    "cpu_ns": ("CPU, cumulative (ms)", 1e-6),
    "rss_bytes": ("RSS (MiB)", 1 / 2**20),
    "tcp_bytes_sent": ("TCP sent, cumulative (KiB)", 1 / 1024),
    "tcp_bytes_received": ("TCP received, cumulative (KiB)", 1 / 1024),
    "tcp_retrans": ("TCP retransmissions, cumulative", 1.0),
    # The samples' current column is the registry's current metric (analysis.metrics).
    metrics.CURRENT: (f"device {metrics.metric(metrics.CURRENT).heading()}", 1.0),
}
MEASURED_CURRENT = f"device {metrics.metric(metrics.CURRENT, metrics.MEASURED).heading()}"
# A message's path (docs/methods.md): seal = created → sealed (emitter), transport = sealed →
# arrived (the MQTT client, the network, the broker), open = arrived → delivered (receiver).
MESSAGE_SLICES = (
    ("seal", "emitter", "t_created_ns", "t_sealed_ns"),
    ("transport", "", "t_sealed_ns", "t_arrived_ns"),
    ("open", "receiver", "t_arrived_ns", "t_delivered_ns"),
)


@dataclass(frozen=True)
class TimelineInput:
    """What a timeline shows, as the store holds it: the runs and their tables' rows."""

    runs: pd.DataFrame  # run_id, configuration, status, run_order
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def rows(self, name: str, run_id: str) -> pd.DataFrame:
        frame = self.tables.get(name)
        if frame is None or frame.empty:
            return pd.DataFrame()
        return frame[frame["run_id"] == run_id]


def load(results_dir: Path, run_id: str | None = None) -> TimelineInput:
    """Every run of ``results_dir`` (or the one named: ``SpecError`` when there is none such,
    ``DataError`` when the store holds no run at all), with its rows of ``TABLES``."""
    with read.reading(results_dir):  # one connection for every table
        return _load(results_dir, run_id)


def _load(results_dir: Path, run_id: str | None) -> TimelineInput:
    runs = read.require_runs(results_dir)
    if run_id is not None:
        known = runs["run_id"].tolist()
        if run_id not in known:
            hint = difflib.get_close_matches(run_id, known, n=1)
            raise SpecError(
                f"--run {run_id!r}: no such run in {results_dir}"
                + (f" (did you mean {hint[0]}?)" if hint else f"; its runs: {', '.join(known[:5])}")
            )
        runs = runs[runs["run_id"] == run_id]
    tables = {name: read.table(results_dir, name, run_id) for name in TABLES}
    phases = read.handshake_phases(results_dir)
    tables[HANDSHAKES] = phases if run_id is None else phases[phases["run_id"] == run_id]
    return TimelineInput(runs, tables)


def documents(results_dir: Path, run_id: str | None = None) -> dict[str, Any]:
    """File name → JSON document: ``timeline.json`` of the experiment, or
    ``timeline-RUN.json`` of one run."""
    data = load(results_dir, run_id)
    return {FILE_NAME if run_id is None else f"timeline-{run_id}.json": render(data)}


def _us(t_ns: Any) -> float:
    return int(t_ns) / 1000.0


def _present(value: Any) -> bool:
    """Not NULL (None, NaN or pandas' NA)."""
    return not (value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)))


def _who(agent: str, device: Any) -> str:
    """'emitter', or 'device 3 emitter' for a fleet's device (None/0 without a fleet)."""
    return f"device {int(device)} {agent}" if _present(device) and int(device) > 0 else agent


def _number(value: Any) -> float | int | None:
    if not _present(value):
        return None
    number = float(value)
    return int(number) if number.is_integer() else number


class _Tracks:
    """Thread ids of one run's tracks, in the order they first appear."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, name: str) -> int:
        return self.ids.setdefault(name, len(self.ids) + 1)


def render(data: TimelineInput) -> dict[str, Any]:
    """The trace document: one process per run, in run order."""
    events: list[dict[str, Any]] = []
    for pid, run in enumerate(data.runs.sort_values(["run_order", "run_id"]).itertuples(), 1):
        tracks = _Tracks()
        run_events = list(_run_events(data, run.run_id, pid, tracks))
        events.append(_metadata(pid, 0, "process_name", name=f"{run.run_id} ({run.status})"))
        events.append(_metadata(pid, 0, "process_sort_index", sort_index=pid))
        for name, tid in tracks.ids.items():
            events.append(_metadata(pid, tid, "thread_name", name=name))
            events.append(_metadata(pid, tid, "thread_sort_index", sort_index=tid))
        # Each track's events in time order (a viewer wants them so; the test checks it): a
        # thread's by its id, a counter's (process-wide, no thread) by its name.
        events += sorted(run_events, key=_track_order)
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "producer": f"iotsecbench {__version__}",
            "clock": "CLOCK_MONOTONIC of the host (time.monotonic_ns), in microseconds",
            "runs": ", ".join(str(run_id) for run_id in data.runs["run_id"]),
        },
    }


def _track_order(event: dict[str, Any]) -> tuple[bool, int | str, float, bool]:
    counter = event["ph"] == "C"
    return counter, event["name"] if counter else event["tid"], event["ts"], event["ph"] == "e"


def _metadata(pid: int, tid: int, kind: str, **args: Any) -> dict[str, Any]:
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": args}


def _run_events(
    data: TimelineInput, run_id: str, pid: int, tracks: _Tracks
) -> Iterator[dict[str, Any]]:
    yield from _handshakes(data.rows(HANDSHAKES, run_id), pid, tracks)
    yield from _messages(data.rows("messages", run_id), run_id, pid, tracks)
    yield from _samples(data.rows("samples", run_id), pid)
    yield from _measured(data.rows("meter_samples", run_id), pid)
    yield from _instants(data.rows("events", run_id), pid, tracks)
    yield from _iotst_groups(data, run_id, pid, tracks)
    yield from _counted_groups(data.runs[data.runs["run_id"] == run_id].iloc[0], pid, tracks)


def _handshakes(rows: pd.DataFrame, pid: int, tracks: _Tracks) -> Iterable[dict[str, Any]]:
    for row in rows.itertuples():
        yield {
            "ph": "X",
            "cat": "handshake",
            "name": row.phase,
            "pid": pid,
            "tid": tracks(f"{_who(row.agent, getattr(row, 'device_index', None))} handshake"),
            "ts": _us(row.t_start_ns),
            "dur": (int(row.t_end_ns) - int(row.t_start_ns)) / 1000.0,
            "args": {"wall_ms": _ms(row.wall_ns), "cpu_ms": _ms(row.cpu_ns)},
        }


def _ms(value: Any) -> float | None:
    return int(value) / 1e6 if _present(value) else None


def _messages(
    rows: pd.DataFrame, run_id: str, pid: int, tracks: _Tracks
) -> Iterable[dict[str, Any]]:
    for row in rows.itertuples():
        device = getattr(row, "device_index", None)
        args = {"seq": int(row.seq), "status": row.status, "wire_bytes": _number(row.wire_bytes)}
        for name, agent, start, end in MESSAGE_SLICES:
            begin, finish = getattr(row, start), getattr(row, end)
            if not (_present(begin) and _present(finish)):
                continue  # lost before it arrived, rejected when opened: no such slice
            common = {"cat": name, "name": name, "pid": pid, "args": args}
            if agent:
                tid = tracks(f"{_who(agent, device)} {name}")
                duration = (int(finish) - int(begin)) / 1000.0
                yield {**common, "ph": "X", "tid": tid, "ts": _us(begin), "dur": duration}
            else:  # messages in flight overlap: nestable async slices, one id per message
                tid = tracks(f"{_who('messages', device)} {name}")
                identity = f"{run_id}/{_number(device) or 0}/{int(row.seq)}"
                flight = {"tid": tid, "id2": {"local": identity}}
                yield {**common, **flight, "ph": "b", "ts": _us(begin)}
                yield {**common, **flight, "ph": "e", "ts": _us(finish), "args": {}}


def _samples(rows: pd.DataFrame, pid: int) -> Iterable[dict[str, Any]]:
    for row in rows.itertuples():
        who = _who(row.agent, getattr(row, "device_index", None))
        args = {}
        for column, (label, scale) in SAMPLE_COUNTERS.items():
            value = getattr(row, column, None)
            if _present(value):
                args[label] = float(value) * scale
        yield {"ph": "C", "name": f"{who} samples", "pid": pid, "tid": 0, "ts": _us(row.t_ns),
               "args": args}  # fmt: skip


def _measured(rows: pd.DataFrame, pid: int) -> Iterable[dict[str, Any]]:
    for row in rows.itertuples():
        yield {"ph": "C", "name": f"{row.agent} {MEASURED_CURRENT}", "pid": pid, "tid": 0,
               "ts": _us(row.t_ns), "args": {MEASURED_CURRENT: float(row.current_ma)}}  # fmt: skip


def _instants(rows: pd.DataFrame, pid: int, tracks: _Tracks) -> Iterable[dict[str, Any]]:
    for row in rows.itertuples():
        who = _who(row.agent, getattr(row, "device_index", None))
        detail = json.loads(row.detail_json) if _present(row.detail_json) else {}
        yield {
            "ph": "i",
            "s": "t",
            "cat": "event",
            "name": row.kind,
            "pid": pid,
            "tid": tracks(f"{who} events"),
            "ts": _us(row.t_ns),
            "args": detail if isinstance(detail, dict) else {"detail": detail},
        }


# -- the iotst study's classification groups (bench handshake --trace, docs/iotst.md) -------
IOTST_STATES = ("on_cpu_ns", "network_wait_ns", "runnable_ns", "other_ns")


def _connection_groups(data: TimelineInput, run_id: str) -> Iterator[tuple[int, int, pd.DataFrame]]:
    """(repetition, the connection's start in ns, its groups in order) of each traced
    connection: its start is its TCP connect's (the handshakes row whose detail names the
    repetition); the groups are the stored handshake_groups rows that were traced (a
    counted connection's are drawn from its run's statistics: ``_counted_groups``)."""
    groups = data.rows("handshake_groups", run_id)
    if groups.empty or "on_cpu_ns" not in groups:
        return
    groups = groups[groups["on_cpu_ns"].notna()]
    starts = {}
    for row in data.rows(HANDSHAKES, run_id).itertuples():
        if row.phase == "tcp_connect" and _present(row.detail_json):
            repetition = json.loads(row.detail_json).get("repetition")
            if repetition is not None:
                starts[int(repetition)] = int(row.t_start_ns)
    for repetition, rows in groups.groupby("repetition", sort=True):
        if int(repetition) in starts:
            yield int(repetition), starts[int(repetition)], rows.sort_values("position")


def _iotst_groups(
    data: TimelineInput, run_id: str, pid: int, tracks: _Tracks
) -> Iterable[dict[str, Any]]:
    """Each traced connection's groups laid end to end from its start, each as long as the
    client thread's traced time in it (on CPU, waiting for the network, runnable, other):
    the store keeps each group's times, not when it began, so the slices show the order and
    the lengths, not the gaps a trace would show between groups."""
    tid = None
    for repetition, start_ns, rows in _connection_groups(data, run_id):
        tid = tid or tracks("client iotst groups (traced)")
        at_ns = start_ns
        for row in rows.itertuples():
            length_ns = sum(int(getattr(row, state)) for state in IOTST_STATES)
            yield {
                "ph": "X",
                "cat": "iotst",
                "name": row.group_name,
                "pid": pid,
                "tid": tid,
                "ts": _us(at_ns),
                "dur": length_ns / 1000.0,
                "args": {
                    "repetition": repetition,
                    **{state.removesuffix("_ns") + "_us": int(getattr(row, state)) / 1000.0
                       for state in IOTST_STATES},
                    "markers": int(row.markers),
                },
            }  # fmt: skip
            at_ns += length_ns


def _counted_groups(run: pd.Series, pid: int, tracks: _Tracks) -> Iterable[dict[str, Any]]:
    """A counted configuration's groups (``bench handshake --target``, runs.cost_method
    'counted'): the store keeps each group's mean instructions over the seeds, not one
    connection's, so one mean connection is laid end to end from the first connection's
    start (``runs.t0_ns``, the lab's clock), each group as long as the device's client
    instructions in it take at the profile's clock (device time: counted instructions, the
    clock and CPI of the device model; the network wait and UART I/O are in the args)."""
    if run.get("cost_method") != "counted" or not _present(run.get("t0_ns")):
        return
    details = json.loads(run["details_json"]) if _present(run.get("details_json")) else {}
    if not counted(details) or not details.get("groups"):
        return
    rate = device_instructions_per_s(details)
    clock_mhz = details["device_time_s"]["clock_mhz"]
    tid = tracks(f"device iotst groups ({details['method']}, at {clock_mhz:g} MHz)")
    at_ns = int(run["t0_ns"])
    for name in details.get("group_order") or list(details["groups"]):
        group = details["groups"][name]
        length_ns = round(group["client"]["mean"] / rate * 1e9)
        yield {
            "ph": "X",
            "cat": "iotst",
            "name": name,
            "pid": pid,
            "tid": tid,
            "ts": _us(at_ns),
            "dur": length_ns / 1000.0,
            "args": {
                "client_instructions_mean": group["client"]["mean"],
                "network_wait_instructions_mean": group["wait"],
                "uart_io_instructions_mean": group["io"],
                "repetitions": details.get("repetitions"),
                "device_time": "modelled from counted instructions",
            },
        }
        at_ns += length_ns
