"""``iotsecbench calibrate`` (docs/meters.md): the attached runs a calibration fits to — each
run's logged activity, as the energy model takes it, with the measured current that
``iotsecbench attach`` stored for the same sample windows — the fit (``energy.calibrate``)
and the calibrated profile written as a TOML file ``run --device FILE`` reads."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from iotsecbench.energy.calibrate import Calibration, CalibrationRun, calibrate, profile_toml
from iotsecbench.energy.model import Activity, Operation
from iotsecbench.energy.profile import DeviceProfile, load_profile
from iotsecbench.errors import EnvironmentProblem, SpecError
from iotsecbench.files import write_atomic
from iotsecbench.store import read
from iotsecbench.store.duckdb_store import RECORD_FILENAME
from iotsecbench.workflows.attach import locate_run, results_directory


def attached_runs(paths: list[Path], agent: str) -> tuple[list[CalibrationRun], list[str]]:
    """Every run with a trace attached for ``agent`` among ``paths`` (run directories, or
    results directories: all their attached runs), and the device profiles they were run
    with. SpecError for a run directory without a trace, or a path with none at all."""
    runs: list[CalibrationRun] = []
    devices: list[str] = []
    for path in paths:
        if (Path(path) / RECORD_FILENAME).is_file():
            results_dir, run_id = locate_run(path, None)
            wanted: list[str] | None = [run_id]
        else:
            results_dir, wanted = results_directory(path), None
        with read.reading(results_dir):  # one connection for every table of its runs
            found_runs, found_devices = _attached(path, results_dir, wanted, agent)
        runs += found_runs
        devices += found_devices
    return runs, devices


def _attached(
    path: Path, results_dir: Path, wanted: list[str] | None, agent: str
) -> tuple[list[CalibrationRun], list[str]]:
    """``attached_runs`` of one path (``wanted``: its run, or None: every attached run)."""
    runs: list[CalibrationRun] = []
    devices: list[str] = []
    traces = read.table(results_dir, "meter_traces")
    traces = traces.loc[traces["agent"] == agent]
    run_ids = wanted if wanted is not None else sorted(traces["run_id"])
    if not run_ids:
        raise SpecError(
            f"{path}: no run with a trace attached to its {agent} "
            "(attach one: iotsecbench attach RUN TRACE)"
        )
    device = read.runs_frame(results_dir).set_index("run_id")["device"]
    for run_id in run_ids:
        found = traces.loc[traces["run_id"] == run_id, "sha256"]
        if found.empty:
            raise SpecError(
                f"run {run_id} has no trace attached to its {agent}: attach one first "
                "(iotsecbench attach)"
            )
        runs.append(_run(results_dir, run_id, agent, str(found.iloc[0])))
        devices.append(str(device.get(run_id)))
    return runs, devices


def _run(results_dir: Path, run_id: str, agent: str, sha256: str) -> CalibrationRun:
    samples = read.table(results_dir, "samples", run_id, first_device=True)
    samples = samples.loc[samples["agent"] == agent].sort_values("t_ns")
    operations = read.table(results_dir, "operations", run_id, first_device=True)
    operations = operations.loc[operations["agent"] == agent]
    measured = read.table(results_dir, "meter_samples", run_id)
    measured = measured.loc[measured["agent"] == agent]
    return CalibrationRun(
        name=run_id,
        trace_sha256=sha256,
        activity=Activity.from_samples(
            samples,
            (
                Operation(int(t), str(p), int(a))
                for t, p, a in operations[["t_ns", "primitive", "amount"]].itertuples(index=False)
            ),
        ),
        measured_t_ns=measured["t_ns"].to_numpy(dtype=np.int64),
        measured_ma=measured["current_ma"].to_numpy(dtype=float),
    )


@dataclass(frozen=True)
class Calibrated:
    """What ``calibrate_profile`` did, for the command's summary."""

    start: DeviceProfile  # the profile the fit started from
    result: Calibration  # the fit; result.profile is the fitted profile, renamed
    runs: int  # attached runs fitted to
    held_out: int  # attached runs held back (their residual reported)


def calibrate_profile(
    paths: list[Path],
    out: Path,
    *,
    agent: str = "emitter",
    profile: str | None = None,
    fit: list[str] | None = None,
    check: list[Path] | None = None,
    name: str | None = None,
    version: str = "",
) -> Calibrated:
    """Fit a device profile's guessed numbers to the measured current of the runs attached at
    ``paths`` (``check``: runs held back) and write the calibrated profile to ``out``.
    ``profile``: where to start (default: the runs' own device profile, which they must
    share); ``fit``: the numbers to fit (default: every guessed one the runs exercise)."""
    fitting, devices = attached_runs(paths, agent)
    held_out, _ = attached_runs(check, agent) if check else ([], [])
    if profile is None:
        if len(set(devices)) != 1:
            raise SpecError(
                f"the runs used different device profiles ({', '.join(sorted(set(devices)))}): "
                "choose one with --profile"
            )
        profile = devices[0]
    start = load_profile(profile)
    result = calibrate(start, fitting, fit, held_out=held_out, version=version)
    calibrated = write_calibrated(
        result.profile, start, name, f"calibrated against {len(fitting)} attached run(s)", out,
        f"Device profile calibrated by iotsecbench {version} calibrate from {start.name}\n"
        f"against {len(fitting)} run(s) with power-meter traces; fitted numbers have status\n"
        "'calibrated' and a source naming the traces (SHA-256) and the fit's residual.",
    )  # fmt: skip
    return Calibrated(start, replace(result, profile=calibrated), len(fitting), len(held_out))


def write_calibrated(
    fitted: DeviceProfile,
    start: DeviceProfile,
    name: str | None,
    what: str,
    out: Path,
    header: str,
) -> DeviceProfile:
    """Every calibration's ending (meter traces, handshake times, benchmark logs): the
    fitted profile named (default <start>-calibrated), described, written atomically with
    its header comment; ``EnvironmentProblem`` when ``out`` cannot be written."""
    calibrated = replace(
        fitted,
        name=name or f"{start.name}-calibrated",
        description=f"{start.description} — {what}",
    )
    try:
        write_atomic(out, profile_toml(calibrated, header))
    except OSError as error:
        raise EnvironmentProblem(
            f"--out {out}: cannot write ({error.strerror or error}); choose a writable path"
        ) from error
    return calibrated
