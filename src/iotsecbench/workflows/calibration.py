"""The attached runs a calibration fits to (``iotsecbench calibrate``, docs/meters.md): each
run's logged activity, as the energy model takes it, with the measured current that
``iotsecbench attach`` stored for the same sample windows."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from iotsecbench.energy.calibrate import CalibrationRun
from iotsecbench.energy.model import Activity, Operation
from iotsecbench.errors import SpecError
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
