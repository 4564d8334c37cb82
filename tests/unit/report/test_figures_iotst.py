"""The iotst report views from stored benchmark statistics (synthetic, known values)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from iotsecbench.report import figures_iotst
from iotsecbench.report.data import ReportData
from iotsecbench.report.style import Palette


def _stat(mean: float) -> dict[str, float]:
    return {"mean": mean, "ci_low": 0.9 * mean, "ci_high": 1.1 * mean, "n": 10}


def _details(cpu_s: float) -> dict:
    return {
        "network_invariant_cpu_s": _stat(cpu_s),
        "with_network_wait_s": _stat(2 * cpu_s),
        "groups": {"CLIENT_HELLO": cpu_s / 2, "CERT_CHAIN": cpu_s / 2},
        "group_states_s": {
            "CLIENT_HELLO": {"on_cpu": cpu_s / 2},
            "CERT_CHAIN": {"on_cpu": cpu_s / 2},
        },
        "ci_half_width_by_repetitions": [[2, 0.2], [3, 0.1], [4, 0.05]],
        "scheduler_slice_s": 0.0015,
        "scheduler_slice_source": "kernel default 0.75 ms x (1 + log2 2 CPUs)",
        "device_model": {
            "device": "esp32-wroom-32",
            "by_clock_and_cores": {
                "80MHz x1": {"seconds": 3.0, "clock_mhz": 80, "cores": 1},
                "240MHz x1": {
                    "seconds": 1.0,
                    "clock_mhz": 240,
                    "cores": 1,
                    "model_range": {"low": 0.9, "high": 1.4, "level": 0.9, "method": "m"},
                },
                "240MHz x2": {"seconds": 0.9, "clock_mhz": 240, "cores": 2},
            },
        },
    }


def _data() -> ReportData:
    runs = pd.DataFrame(
        {
            "cell_label": ["a [1 core]", "b [1 core]", "run"],
            "details_json": [json.dumps(_details(0.002)), json.dumps(_details(0.004)), "{}"],
            "cost_method": ["traced", "traced", "timed"],
        }
    )
    groups = pd.DataFrame(
        {
            "run_id": ["r"] * 4,
            "repetition": [0, 0, 1, 1],
            "group_name": ["CLIENT_HELLO", "CERT_CHAIN"] * 2,
            "position": [0, 1, 0, 1],
            "longest_run_ns": [100_000, 500_000, 0, 450_000],
        }
    )
    return ReportData(source=Path("."), runs=runs, handshake_groups=groups, configurations=["a"])


def test_only_traced_configurations_are_read_and_the_model_is_the_fastest_single_core() -> None:
    traced = figures_iotst.traced_configurations(_data())
    assert [label for label, _ in traced] == ["a [1 core]", "b [1 core]"]
    seconds, label, ends = figures_iotst._modelled_at_fastest(traced[0][1])
    assert seconds == 1.0 and label == "esp32-wroom-32 @ 240 MHz" and ends == (0.9, 1.4)


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_every_iotst_view_is_drawn_and_labels_what_is_modelled() -> None:
    data = _data()
    palette = Palette(data.configurations)
    drawn = {builder.__name__: builder(data, palette) for builder in figures_iotst.BUILDERS}
    assert all(figure is not None and len(figure.png) > 5_000 for figure in drawn.values())
    assert "modelled, not measured" in drawn["iotst_cost"].caption
    assert "model's 90 % range" in drawn["iotst_cost"].caption


def test_a_report_without_traces_draws_none_of_them() -> None:
    data = ReportData(
        source=Path("."), runs=pd.DataFrame({"cell_label": ["x"], "details_json": ["{}"]})
    )
    palette = Palette(["x"])
    assert all(builder(data, palette) is None for builder in figures_iotst.BUILDERS)
