"""The device model's draws for a results directory: how each run's modelled mean current moves
when its device profile is drawn from its ranges (``energy.uncertainty``), as the analysis
takes them (``analysis.model_range.ModelDraws``).

Every run is evaluated on the same draws of its profile (common random numbers), from the
activity the store kept: the samples' counters and the logged operations, summed per run
(``energy.exposure``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from iotsecbench.analysis.model_range import ModelDraws
from iotsecbench.energy.exposure import Exposure
from iotsecbench.energy.profile import load_profile
from iotsecbench.energy.uncertainty import MODEL_LEVEL, draw_profile, point_values
from iotsecbench.errors import SpecError
from iotsecbench.store import read

NOTES = (
    "model range: each run's mean modelled current recomputed on every draw of its device "
    "profile from the run's summed activity (energy.exposure); what the per-window model "
    "clips (airtime above a window, work queued after the last sample) is held at the "
    "profile's values",
    "model range: the same draws for every configuration (common random numbers), so a "
    "difference's range keeps the configurations' correlation",
)
COUNTED_NOTE = (
    "model range of a counted emitter (run --target): its CPU time is the instructions "
    "counted on the target × the CPI's draw / the clock (the count itself is exact), its "
    "currents and radio the profile's draws — the range is the CPI's and the currents', and "
    "the figure stays counted on the target, not modelled"
)
COUNTERS = ("tcp_bytes_sent", "tcp_bytes_received", "tcp_segs_out", "tcp_segs_in")


def model_draws(results_dir: Path, draws: int, seed: int) -> tuple[ModelDraws | None, str]:
    """The draws of every 'ok' run of ``results_dir``, or None and why not (a run's device
    profile cannot be loaded any more: a user file moved away)."""
    runs = read.runs_frame(results_dir)
    runs = runs[runs["status"] == "ok"].set_index("run_id")
    samples, operations = read.activity_frames(results_dir)
    totals: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
    for run_id, device, primitive, calls, amount in operations.itertuples(index=False):
        totals.setdefault((run_id, device), {})[primitive] = (int(calls), int(amount))
    drawn: dict[str, Any] = {}
    shifts: dict[tuple[str, str, Any], np.ndarray] = {}
    factors: dict[tuple[str, str, Any], np.ndarray] = {}
    per_byte: dict[tuple[str, str, Any], float] = {}
    methods, any_counted = set(), False
    for (run_id, device), own in samples.groupby(["run_id", "device"], sort=False):
        name = str(runs.at[run_id, "device"])
        if name not in drawn:
            try:
                profile = load_profile(name)
            except SpecError as error:
                return None, f"no model range: {error}"
            drawn[name] = (profile, draw_profile(profile, draws, seed), point_values(profile))
        profile, profile_draws, point = drawn[name]
        methods.add(profile_draws.method)
        counted = device == "emitter" and _counted(runs, run_id)
        exposure = Exposure.from_samples(
            own["t_ns"].to_numpy(dtype=np.int64),
            *(np.nan_to_num(own[c].to_numpy(dtype=float)) for c in COUNTERS),
            totals.get((run_id, device), {}),
            np.nan_to_num(own["cpu_fraction"].to_numpy(dtype=float)) if counted else None,
        )
        any_counted = any_counted or counted
        at_point = float(exposure.mean_current_ma(profile, point))
        drawn_current = np.asarray(exposure.mean_current_ma(profile, profile_draws.values))
        key = (str(own["configuration"].iloc[0]), str(device), own["run"].iloc[0])
        shifts[key] = drawn_current - at_point
        stored = _time_weighted_mean(own)
        voltage = profile_draws["supply_voltage"] / point["supply_voltage"]
        factors[key] = voltage * (stored + shifts[key]) / stored if stored > 0 else voltage
        column = f"energy_per_byte_{device}_uj"
        # A counted saturating emitter's energy per byte is at the device's pace (runner.collect),
        # not its samples' windows, whose current these draws move: no range rather than a wrong
        # one (its CPU share is 100 % in every emulated window, so the CPI's draws would not show).
        paced = counted and runs.at[run_id, "pacing"] == "saturating"
        if column in runs.columns and pd.notna(runs.at[run_id, column]) and not paced:
            per_byte[key] = float(runs.at[run_id, column])
    if not shifts:
        return None, "no model range: no run has modelled samples"
    return (
        ModelDraws(
            shifts=shifts,
            energy_factors=factors,
            draws=draws,
            method="; ".join(sorted(methods)),
            level=MODEL_LEVEL,
            notes=NOTES + ((COUNTED_NOTE,) if any_counted else ()),
            energy_per_byte=per_byte,
        ),
        "",
    )


def _counted(runs: pd.DataFrame, run_id: str) -> bool:
    """Whether the run's emitter was the device client, its CPU counted (``run --target``)."""
    return "cost_method" in runs.columns and runs.at[run_id, "cost_method"] == "counted"


def _time_weighted_mean(samples: pd.DataFrame) -> float:
    """A run's stored mean current, each window weighted by its length (the first window as
    long as the median one, as the model takes it)."""
    times = samples["t_ns"].to_numpy(dtype=float)
    current = samples["current_ma"].to_numpy(dtype=float)
    if times.size < 2:
        return float(current.mean()) if current.size else 0.0
    gaps = np.diff(times)
    windows = np.concatenate(([np.median(gaps)], gaps))
    return float(np.average(current, weights=windows))
