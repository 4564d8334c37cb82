"""Attaching a power-meter trace to a stored run (``iotsecbench attach``, docs/meters.md).

The run is placed in the trace (``meters.align``: sync channel, explicit offset or
correlation with the modelled current), then the trace is integrated at its full rate over
every sample window of the agent (so the measured current lies beside the modelled one, on
the same windows), over each connection phase, over publishing as a whole and over each
message's window. Everything is computed before anything is written; the rows then go into
the run's record file and the database together (``store.amend``). A trace that does not
cover the run's activity, or does not look like the run, is refused (exit 4), nothing stored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from iotsecbench import meters
from iotsecbench.errors import DataError, SpecError
from iotsecbench.meters.align import Alignment, by_correlation, by_offset, by_sync
from iotsecbench.meters.trace import MAX_VOLTAGE_V
from iotsecbench.store import read
from iotsecbench.store.amend import replace_agent_rows
from iotsecbench.store.duckdb_store import (
    RECORD_FILENAME,
    RUNS_DIRNAME,
    database_path,
    utc_stamp,
)

AGENTS = ("emitter", "receiver")
HANDSHAKE_PHASES = ("tcp_connect", "tls_handshake", "mqtt_connect", "key_exchange")


@dataclass(frozen=True)
class Attached:
    """What ``attach`` stored, for the command's summary."""

    run_id: str
    agent: str
    alignment: Alignment
    trace: meters.MeterTrace
    windows: int  # sample windows with a measured current
    measured_ma: float  # mean over those windows
    modelled_ma: float  # mean modelled current over the same windows
    phases: pd.DataFrame  # phase, seq, charge_uc, mean_current_ma, energy_uj (handshakes first)


def locate_run(path: Path, run_id: str | None) -> tuple[Path, str]:
    """(results directory, run id) from a run directory, or a results directory and
    ``run_id`` (needed when it holds more than one completed run)."""
    path = Path(path)
    if (path / RECORD_FILENAME).is_file():
        if run_id not in (None, path.name):
            raise SpecError(f"{path} is run {path.name}, not --run {run_id}")
        return path.parent.parent, path.name
    runs = read.runs_frame(results_directory(path))
    completed = runs.loc[runs["status"] == "ok", "run_id"].tolist()
    if run_id is not None:
        if run_id not in completed:
            raise SpecError(
                f"{path} has no completed run {run_id!r}; its completed runs: "
                + (", ".join(completed) or "none")
            )
        return path, run_id
    if len(completed) != 1:
        raise SpecError(
            f"{path} holds {len(completed)} completed runs: name one with --run "
            f"(or give its directory {path / RUNS_DIRNAME / '<run id>'}): "
            + ", ".join(completed[:8])
            + (" …" if len(completed) > 8 else "")
        )
    return path, completed[0]


def results_directory(path: Path) -> Path:
    """``path`` when it holds a results database; SpecError otherwise."""
    if not database_path(path).is_file():
        raise SpecError(
            f"{path} is neither a run directory (with {RECORD_FILENAME}) nor a results "
            "directory (with results.duckdb)"
        )
    return Path(path)


@dataclass(frozen=True)
class RunActivity:
    """One agent's side of a stored run, on the run's time axis (s from runs.t0_ns)."""

    t0_ns: int
    sample_end_ns: np.ndarray  # the agent's sample times: each window ends here
    window_ns: np.ndarray  # and lasts this long (the first: the median spacing)
    modelled_ma: np.ndarray
    handshakes: pd.DataFrame  # phase, t_start_ns, t_end_ns
    message_seq: np.ndarray
    message_start_ns: np.ndarray  # emitter: created; receiver: arrived
    message_end_ns: np.ndarray  # emitter: published; receiver: arrived

    def run_s(self, t_ns: np.ndarray | int) -> np.ndarray:
        return (np.asarray(t_ns, dtype=np.int64) - self.t0_ns) / 1e9

    @property
    def activity_s(self) -> tuple[float, float]:
        """First handshake start → last message: the span a trace must cover."""
        starts = [*self.handshakes["t_start_ns"].dropna(), *self.message_start_ns[:1]]
        ends = [*self.handshakes["t_end_ns"].dropna(), *self.message_end_ns[-1:]]
        if not starts:
            raise DataError("the run recorded neither a handshake nor a message: nothing to place")
        return float(self.run_s(min(starts))), float(self.run_s(max(ends)))


def run_activity(results_dir: Path, run_id: str, agent: str) -> RunActivity:
    with read.reading(results_dir):  # one connection for the four tables
        return _run_activity(results_dir, run_id, agent)


def _run_activity(results_dir: Path, run_id: str, agent: str) -> RunActivity:
    runs = read.runs_frame(results_dir)
    row = runs.loc[runs["run_id"] == run_id].iloc[0]
    if row["status"] != "ok":
        raise SpecError(f"run {run_id} ended {row['status']}: attach a trace to a completed run")
    samples = read.table(results_dir, "samples", run_id, first_device=True)
    samples = samples.loc[(samples["agent"] == agent) & samples["current_ma"].notna()]
    if len(samples) < 2:
        raise DataError(f"run {run_id} has {len(samples)} {agent} sample(s): too few to attach")
    ends = samples["t_ns"].to_numpy(dtype=np.int64)
    gaps = np.diff(ends)
    handshakes = read.table(results_dir, "handshakes", run_id, first_device=True)
    handshakes = handshakes.loc[handshakes["agent"] == agent, ["phase", "t_start_ns", "t_end_ns"]]
    messages = read.table(results_dir, "messages", run_id, first_device=True)
    if agent == "emitter":
        messages = messages.dropna(subset=["t_created_ns", "t_published_ns"])
        start, end = messages["t_created_ns"], messages["t_published_ns"]
    else:
        messages = messages.dropna(subset=["t_arrived_ns"])
        start = end = messages["t_arrived_ns"]
    order = np.argsort(start.to_numpy(dtype=np.int64), kind="stable")
    return RunActivity(
        t0_ns=int(row["t0_ns"]),
        sample_end_ns=ends,
        window_ns=np.concatenate(([int(np.median(gaps))], gaps)),
        modelled_ma=samples["current_ma"].to_numpy(dtype=float),
        handshakes=handshakes.reset_index(drop=True),
        message_seq=messages["seq"].to_numpy(dtype=np.int64)[order],
        message_start_ns=start.to_numpy(dtype=np.int64)[order],
        message_end_ns=end.to_numpy(dtype=np.int64)[order],
    )


def align(
    trace: meters.MeterTrace,
    activity: RunActivity,
    sync_channel: int | None,
    offset_s: float | None,
    correlate: bool,
) -> Alignment:
    """The chosen way, or by default: the sync channel D0 when the trace has digital
    channels, correlation otherwise."""
    chosen = [sync_channel is not None, offset_s is not None, correlate]
    if sum(chosen) > 1:
        raise SpecError("choose one of --sync, --offset and --correlate")
    if offset_s is not None:
        return by_offset(offset_s)
    if sync_channel is not None or (not correlate and trace.edges is not None):
        start, end = activity.activity_s
        return by_sync(trace.edges, sync_channel or 0, start, end)
    measured = trace.series[10]
    # Both series by their windows' centres: the meter's windows start at time_s, the
    # samples' windows end at t_ns.
    measured = pd.DataFrame(
        {"time_s": measured["time_s"] + 0.05, "current_ma": measured["current_ma"]}
    )
    modelled = pd.DataFrame(
        {
            "time_s": activity.run_s(activity.sample_end_ns) - activity.window_ns / 2e9,
            "current_ma": activity.modelled_ma,
        }
    )
    return by_correlation(measured, modelled)


def attach(
    path: Path,
    trace_path: Path,
    *,
    run_id: str | None = None,
    agent: str = "emitter",
    format: str | None = None,
    sync_channel: int | None = None,
    offset_s: float | None = None,
    correlate: bool = False,
    voltage_v: float | None = None,
) -> Attached:
    if agent not in AGENTS:
        raise SpecError(f"--agent {agent!r}: choose emitter or receiver")
    if sync_channel is not None and not 0 <= sync_channel <= 7:
        raise SpecError(f"--sync D{sync_channel}: digital channels are D0–D7")
    if voltage_v is not None and not (math.isfinite(voltage_v) and 0 < voltage_v <= MAX_VOLTAGE_V):
        raise SpecError(
            f"--voltage {voltage_v}: give the supply voltage in volts, > 0 and at most "
            f"{MAX_VOLTAGE_V:g}"
        )
    results_dir, run_id = locate_run(path, run_id)
    activity = run_activity(results_dir, run_id, agent)
    trace = meters.read_trace(trace_path, format)
    alignment = align(trace, activity, sync_channel, offset_s, correlate)

    start_s, end_s = activity.activity_s
    held = (trace.duration_s, alignment.trace_time(start_s), alignment.trace_time(end_s))
    if held[1] < 0 or held[2] > held[0]:
        raise DataError(
            f"{trace_path}: the trace holds 0–{held[0]:.3f} s, the run's activity lies at "
            f"{held[1]:.3f}–{held[2]:.3f} s of it: a trace shorter than the run (or the "
            "wrong offset)"
        )

    windows = _windows(activity)
    charges = meters.charges_between(
        trace_path,
        alignment.trace_time(activity.run_s(windows["t_start_ns"].to_numpy())),
        alignment.trace_time(activity.run_s(windows["t_end_ns"].to_numpy())),
        trace.format,
    )
    ratio = alignment.clock_ratio or 1.0
    windows["charge_uc"] = 1e3 * charges
    windows["mean_current_ma"] = charges / (
        ratio * (windows["t_end_ns"] - windows["t_start_ns"]).to_numpy() / 1e9
    )
    windows = windows.loc[np.isfinite(charges)]
    voltage, voltage_source = _voltage(trace, alignment, (start_s, end_s), voltage_v)
    windows["energy_uj"] = windows["charge_uc"] * voltage if voltage is not None else None

    sampled = windows.loc[windows["phase"] == "sample"]
    phases = windows.loc[windows["phase"] != "sample"]
    modelled = pd.Series(activity.modelled_ma, index=activity.sample_end_ns)
    sample_rows = [
        {"t_ns": int(end), "window_s": (end - start) / 1e9, "current_ma": float(current)}
        for start, end, current in sampled[
            ["t_start_ns", "t_end_ns", "mean_current_ma"]
        ].itertuples(index=False)
    ]
    span_s = float((sampled["t_end_ns"] - sampled["t_start_ns"]).sum()) / 1e9
    charge_mc = float(sampled["charge_uc"].sum()) / 1e3
    trace_row = {
        "file": str(trace_path),
        "sha256": trace.sha256,
        "format": trace.format,
        "samples": trace.samples,
        "rate_hz": trace.rate_hz,
        "trace_duration_s": trace.duration_s,
        "method": alignment.method,
        "offset_s": alignment.offset_s,
        "anchor_s": alignment.anchor_s,
        "clock_ratio": ratio,
        "correlation": alignment.correlation,
        "detail": alignment.detail,
        "voltage_v": voltage,
        "voltage_source": voltage_source,
        "charge_mc": charge_mc,
        "mean_current_ma": charge_mc / (ratio * span_s) if span_s > 0 else None,
        "attached_utc": utc_stamp(),
    }
    phase_rows = [
        {key: _plain(value) for key, value in row.items()}
        for row in phases.drop(columns=["phase_order"]).to_dict("records")
    ]
    replace_agent_rows(
        results_dir,
        run_id,
        agent,
        {"meter_traces": [trace_row], "meter_samples": sample_rows, "meter_phases": phase_rows},
    )
    return Attached(
        run_id=run_id,
        agent=agent,
        alignment=alignment,
        trace=trace,
        windows=len(sample_rows),
        measured_ma=float(sampled["mean_current_ma"].mean()),
        modelled_ma=float(modelled.loc[sampled["t_end_ns"].to_numpy()].mean()),
        phases=phases.loc[phases["phase"] != "message"].reset_index(drop=True),
    )


def _windows(activity: RunActivity) -> pd.DataFrame:
    """Every interval to integrate: the sample windows ('sample'), the handshake phases,
    publishing and each message (its start to the next message's start; the last one lasts
    the median spacing)."""
    frames = [
        pd.DataFrame(
            {
                "phase": "sample",
                "seq": None,
                "t_start_ns": activity.sample_end_ns - activity.window_ns,
                "t_end_ns": activity.sample_end_ns,
            }
        ),
        activity.handshakes.assign(seq=None).dropna(subset=["t_start_ns", "t_end_ns"]),
    ]
    starts = activity.message_start_ns
    if len(starts):
        spacing = int(np.median(np.diff(starts))) if len(starts) > 1 else 0
        ends = np.append(starts[1:], starts[-1] + spacing)
        frames.append(
            pd.DataFrame(
                {
                    "phase": "publishing",
                    "seq": None,
                    "t_start_ns": [int(starts[0])],
                    "t_end_ns": [int(max(activity.message_end_ns[-1], ends[-1]))],
                }
            )
        )
        frames.append(
            pd.DataFrame(
                {
                    "phase": "message",
                    "seq": activity.message_seq,
                    "t_start_ns": starts,
                    "t_end_ns": ends,
                }
            )
        )
    windows = pd.concat(frames, ignore_index=True)
    windows = windows.loc[windows["t_end_ns"] > windows["t_start_ns"]].copy()
    windows["t_start_ns"] = windows["t_start_ns"].astype(np.int64)
    windows["t_end_ns"] = windows["t_end_ns"].astype(np.int64)
    order = {
        name: k for k, name in enumerate(("sample", *HANDSHAKE_PHASES, "publishing", "message"))
    }
    windows["phase_order"] = windows["phase"].map(order)
    return windows.sort_values(["phase_order", "t_start_ns"], kind="stable").reset_index(drop=True)


def _voltage(
    trace: meters.MeterTrace,
    alignment: Alignment,
    span_s: tuple[float, float],
    given: float | None,
) -> tuple[float | None, str | None]:
    """The supply voltage for energy: --voltage when given, else the trace's own voltage
    averaged over the run's activity, else none (charge only)."""
    if given is not None:
        return given, "given"
    series = trace.series[10]
    if "voltage_v" not in series:
        return None, None
    low, high = alignment.trace_time(span_s[0]), alignment.trace_time(span_s[1])
    inside = series.loc[(series["time_s"] >= low - 0.1) & (series["time_s"] <= high)]
    weights = inside["samples"].to_numpy(dtype=float)
    if not weights.sum():
        return None, None
    return float(np.average(inside["voltage_v"], weights=weights)), "measured"


def _plain(value: Any) -> Any:
    """numpy/pandas scalars and NaN as JSON-ready Python values."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, np.generic):
        value = value.item()
        return None if isinstance(value, float) and math.isnan(value) else value
    return value
