"""``analysis.measured.per_trace``: an attached trace against the model, from frames with known
currents and charges — means, the RMS residual, the handshake's phases summed, energy only
where every publishing phase has one."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from iotsecbench.analysis.measured import per_trace
from iotsecbench.analysis.metrics import PHASES

TRACES = pd.DataFrame(
    [
        {"run_id": "r1", "agent": "emitter", "configuration": "tls", "format": "ppk2",
         "sha256": "ab" * 32, "method": "correlation", "correlation": 0.97, "clock_ratio": None},
        {"run_id": "r2", "agent": "emitter", "configuration": "plain", "format": "jls",
         "sha256": "cd" * 32, "method": "offset", "correlation": None, "clock_ratio": None},
    ]
)  # fmt: skip
WINDOWS = pd.DataFrame(
    {
        "run_id": ["r1"] * 3 + ["r2"] * 2 + ["r1"],
        "device": ["emitter"] * 5 + ["receiver"],  # the receiver's window is not r1's emitter's
        "measured_ma": [1.0, 2.0, 3.0, 5.0, 5.0, 100.0],
        "modelled_ma": [2.0, 2.0, 2.0, 4.0, 6.0, 0.0],
    }
)
PHASE_ROWS = pd.DataFrame(
    [
        ("r1", PHASES[0], 10.0, 33.0),
        ("r1", PHASES[-1], 5.0, 16.5),
        ("r1", "message", 1.0, 3.3),
        ("r1", "message", 3.0, 9.9),
        ("r1", "publishing", 2000.0, 6600.0),
        ("r2", "publishing", 500.0, np.nan),  # no voltage: no energy
    ],
    columns=["run_id", "phase", "charge_uc", "energy_uj"],
).assign(agent="emitter")


def test_each_trace_against_the_model_over_its_own_windows():
    r1, r2 = per_trace(TRACES, WINDOWS, PHASE_ROWS, {"r1": 1, "r2": 2}).to_dict("records")
    assert (r1["configuration"], r1["run"], r1["device"]) == ("tls", 1, "emitter")
    assert r1["measured_ma"] == pytest.approx(2.0) and r1["modelled_ma"] == pytest.approx(2.0)
    assert r1["rms_residual_ma"] == pytest.approx(math.sqrt(2 / 3))  # residuals 1, 0, -1
    assert r1["handshake_uc"] == pytest.approx(15.0)  # every handshake phase, not the rest
    assert r1["per_message_uc"] == pytest.approx(2.0)
    assert r1["publishing_mc"] == pytest.approx(2.0) and r1["publishing_mj"] == pytest.approx(6.6)
    assert r2["rms_residual_ma"] == pytest.approx(1.0) and r2["handshake_uc"] == 0
    assert pd.isna(r2["per_message_uc"])
    assert r2["publishing_mc"] == pytest.approx(0.5) and pd.isna(r2["publishing_mj"])  # no voltage


def test_without_phases_the_currents_still_compare():
    [r1] = per_trace(TRACES.iloc[:1], WINDOWS, None, {}).to_dict("records")
    assert r1["run"] is None and r1["rms_residual_ma"] == pytest.approx(math.sqrt(2 / 3))
    assert r1["handshake_uc"] == 0 and pd.isna(r1["publishing_mc"])
