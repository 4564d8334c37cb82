"""Power-meter traces attached to runs (``iotsecbench attach``, docs/meters.md) against the
energy model: per attached trace, both currents over the run's own sample windows, the
residual, and the measured charge of the handshake, per message and of publishing.

Pure: the store's frames in, one row per trace out; ``report.measured`` says it. Every figure
keeps its kind: *measured with <meter>* (the trace's columns) beside *modelled* (the model's),
never mixed into one.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from iotsecbench.analysis.metrics import PHASES


def per_trace(
    traces: pd.DataFrame,
    windows: pd.DataFrame,
    phases: pd.DataFrame | None,
    repetitions: Mapping[str, int],
) -> pd.DataFrame:
    """One row per attached trace (``traces``: run_id, agent, configuration, format, sha256
    and its alignment's method, correlation, clock_ratio), from the sample windows both
    currents were integrated over (``windows``: run_id, device, measured_ma, modelled_ma) and
    the measured charge per phase (``phases``: run_id, agent, phase, charge_uc, energy_uj).

    ``rms_residual_ma`` is the RMS of modelled − measured over the windows; energy is given
    only where every publishing phase has one (a voltage measured or given)."""
    if phases is None:  # no phase was charged: the currents still compare
        phases = pd.DataFrame(columns=["run_id", "agent", "phase", "charge_uc", "energy_uj"])
    rows = []
    for _, trace in traces.iterrows():
        run_id, device = trace["run_id"], trace["agent"]
        own_windows = windows.loc[(windows["run_id"] == run_id) & (windows["device"] == device)]
        own = phases.loc[(phases["run_id"] == run_id) & (phases["agent"] == device)]
        residual = own_windows["modelled_ma"] - own_windows["measured_ma"]
        messages = own.loc[own["phase"] == "message", "charge_uc"]
        publishing = own.loc[own["phase"] == "publishing"]
        rows.append(
            {
                "run_id": run_id,
                "configuration": trace["configuration"],
                "run": repetitions.get(run_id),
                "device": device,
                "format": trace["format"],
                "sha256": trace["sha256"],
                "method": trace["method"],
                "correlation": trace.get("correlation"),
                "clock_ratio": trace.get("clock_ratio"),
                "measured_ma": own_windows["measured_ma"].mean(),
                "modelled_ma": own_windows["modelled_ma"].mean(),
                "rms_residual_ma": float(np.sqrt((residual**2).mean())),
                "handshake_uc": own.loc[own["phase"].isin(PHASES), "charge_uc"].sum(),
                "per_message_uc": messages.mean() if len(messages) else None,
                "publishing_mc": publishing["charge_uc"].sum() / 1e3 if len(publishing) else None,
                "publishing_mj": publishing["energy_uj"].sum() / 1e3
                if len(publishing) and publishing["energy_uj"].notna().all()
                else None,
            }
        )
    return pd.DataFrame(rows)
