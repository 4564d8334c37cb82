"""The per-configuration summary printed at the end of ``run`` (and used by reports): the
stored tables read once and handed to the analysis, which derives every value
(``analysis.per_run``; each column a metric of ``analysis.metrics``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from iotsecbench.analysis.metrics import METRICS, Registry
from iotsecbench.analysis.per_run import TABLES, empty_frames, per_run_values, summarise_runs
from iotsecbench.spec.load import stored_spec_data
from iotsecbench.store import read


def summary_frames(
    results_dir: Path, metrics: Registry = METRICS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The stored tables read once, for both frames the report uses: one row per ok run
    (``per_run``) and one per configuration (the summary), a column per metric of
    ``metrics``."""
    runs = read.runs_frame(results_dir)
    runs = runs[runs["status"] == "ok"]
    if runs.empty:
        return empty_frames(metrics)
    # A fleet's per-device figures are its device 0's (its fleet figures are in `runs`).
    tables = {name: read.table(results_dir, name, first_device=True) for name in TABLES}
    # Every connection's phases: the agents' and a handshake benchmark's, in one shape.
    tables["handshakes"] = read.handshake_phases(results_dir, first_device=True)
    latency = read.latency_frame(results_dir)
    per_run = per_run_values(runs, tables, latency, metrics)
    # Configurations in the order the spec lists them (runs themselves are shuffled).
    order = (stored_spec_data(results_dir) or {}).get("configurations", [])
    return per_run, summarise_runs(runs, tables["messages"], latency, per_run, order, metrics)


def summarise(results_dir: Path) -> pd.DataFrame:
    """One row per cell label (ok runs only), a column per summary metric plus warnings."""
    return summary_frames(results_dir)[1]
