"""The `iotst` study's views of a traced handshake benchmark (``bench handshake --trace``,
docs/iotst.md): how fast the interval closes with repetitions, the cost per configuration with
and without the network wait beside the modelled device time, the cost per classification
group, and the longest uninterrupted run per group against the scheduler's time slice.

They read the traced runs (``runs.cost_method`` 'traced'): the per-configuration statistics
``bench handshake`` stored in their ``details_json`` and the per-repetition rows of
``trace_groups``; a report of anything else has neither, and these figures are left out.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from iotsecbench.report.data import ReportData
from iotsecbench.report.figures import ReportFigure, _finish, log_scale
from iotsecbench.report.readable import MEASURED
from iotsecbench.report.style import Palette, plt, styled

TARGET_CI = 0.01  # the study's ±1 % at 95 %


def traced_configurations(data: ReportData) -> list[tuple[str, dict[str, Any]]]:
    """(configuration, its stored trace statistics) of every traced configuration, in run
    order."""
    runs = data.runs
    if runs is None or runs.empty:
        return []
    traced = runs[data.traced_runs]
    return [
        (str(label), json.loads(details) if isinstance(details, str) and details else {})
        for label, details in zip(traced["cell_label"], traced["details_json"], strict=True)
    ]


def _rows(count: int) -> tuple[Any, Any, np.ndarray]:
    """A figure with one row per configuration, the first at the top."""
    figure, axis = plt.subplots(figsize=(7.5, max(2.6, 0.9 + 0.28 * count)))
    return figure, axis, np.arange(count)[::-1]


def _label_rows(
    axis: Any, positions: np.ndarray, traced: list[tuple[str, dict[str, Any]]], xlabel: str
) -> None:
    axis.set_yticks(positions, [_short(c) for c, _ in traced], fontsize=6)
    axis.set_xlabel(xlabel)
    axis.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def _short(label: str) -> str:
    """The configuration label without the repeated study prefix, for crowded axes."""
    return label.removeprefix("iotst ").strip()


@styled
def iotst_ci_width(data: ReportData, palette: Palette) -> ReportFigure | None:
    traced = [(c, d) for c, d in traced_configurations(data) if d["ci_half_width_by_repetitions"]]
    if not traced:
        return None
    figure, axis = plt.subplots(figsize=(7.5, 3.8))
    for configuration, details in traced:
        widths = np.asarray(details["ci_half_width_by_repetitions"], dtype=float)
        axis.plot(widths[:, 0], 100 * widths[:, 1], lw=1.0, label=_short(configuration))
    axis.axhline(100 * TARGET_CI, color="black", ls="--", lw=0.8, label="±1 % (the study)")
    log_scale(axis, "y")
    axis.xaxis.get_major_locator().set_params(integer=True)
    axis.set_xlabel("repetitions")
    axis.set_ylabel("95 % CI half-width (% of mean)")
    axis.legend(fontsize=6, ncol=2, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _finish(
        "iotst-ci-width",
        "How fast the network-invariant interval closes",
        "Relative half-width of the 95 % interval of the client's network-invariant CPU time "
        "over the first n traced repetitions, per configuration; the dashed line is the "
        "study's ±1 %. Where a line ends above it, more repetitions were needed.",
        MEASURED,
        figure,
    )


def _modelled_at_fastest(details: dict[str, Any]) -> tuple[float, str] | None:
    """The modelled device seconds at the profile's fastest clock on one core, and a label."""
    model = details.get("device_model") or {}
    table = model.get("by_clock_and_cores") or {}
    single = [entry for entry in table.values() if entry.get("cores") == 1]
    if not single:
        return None
    fastest = max(single, key=lambda entry: entry["clock_mhz"])
    return fastest["seconds"], f"{model.get('device', 'device')} @ {fastest['clock_mhz']} MHz"


@styled
def iotst_cost(data: ReportData, palette: Palette) -> ReportFigure | None:
    traced = traced_configurations(data)
    if not traced:
        return None
    figure, axis, positions = _rows(len(traced))
    series = (
        ("network_invariant_cpu_s", "o", "measured: network-invariant CPU"),
        ("with_network_wait_s", "s", "measured: with network wait (wall)"),
    )
    for offset, (key, marker, label) in zip((-0.12, 0.12), series, strict=True):
        stats = [details[key] for _, details in traced]
        means = np.array([1e3 * s["mean"] for s in stats])
        low = means - np.array([1e3 * s["ci_low"] for s in stats])
        high = np.array([1e3 * s["ci_high"] for s in stats]) - means
        axis.errorbar(
            means, positions + offset, xerr=[low, high], fmt=marker, ms=4, capsize=2, label=label
        )
    modelled = [_modelled_at_fastest(details) for _, details in traced]
    if any(m is not None for m in modelled):
        shown = [(p, m) for p, m in zip(positions, modelled, strict=True) if m is not None]
        axis.scatter(
            [1e3 * m[0] for _, m in shown],
            [p for p, _ in shown],
            marker="D",
            facecolors="none",
            edgecolors="black",
            s=22,
            label=f"modelled: {shown[0][1][1]}, one core",
        )
    log_scale(axis, "x")
    _label_rows(axis, positions, traced, "handshake time (ms, log)")
    return _finish(
        "iotst-cost",
        "Handshake cost per configuration: network-invariant, with the network, and modelled",
        "Circles: the client's on-CPU time from the scheduler trace, network waits removed "
        "(the study's Table 2 view); squares: the same handshakes' wall time, network waits "
        "included (Table 1); bars: 95 % intervals over repetitions, measured on this host. "
        "Hollow diamonds are modelled, not measured: the handshake's public-key and symmetric "
        "operations priced with the device profile (docs/iotst.md).",
        MEASURED,
        figure,
    )


@styled
def iotst_groups(data: ReportData, palette: Palette) -> ReportFigure | None:
    traced = traced_configurations(data)
    if not traced:
        return None
    names: list[str] = []
    if data.trace_groups is not None and not data.trace_groups.empty:  # in handshake order
        by_position = data.trace_groups.groupby("group_name")["position"].median()
        names = list(by_position.sort_values().index)
    for _, details in traced:
        names.extend(name for name in details["groups"] if name not in names)
    colors = plt.get_cmap("tab20")(np.linspace(0, 1, max(len(names), 2)))
    figure, axis, positions = _rows(len(traced))
    left = np.zeros(len(traced))
    for color, name in zip(colors, names, strict=False):
        on_cpu = np.array(
            [
                1e3 * details["group_states_s"].get(name, {}).get("on_cpu", 0.0)
                for _, details in traced
            ]
        )
        axis.barh(positions, on_cpu, left=left, color=color, height=0.7, label=name)
        left += on_cpu
    _label_rows(
        axis, positions, traced, "client on-CPU time per handshake (ms, mean over repetitions)"
    )
    return _finish(
        "iotst-groups",
        "Where the handshake's CPU time goes, by classification group",
        "Mean on-CPU time of the client thread in each group (the agent's trace markers: "
        "TCP connect, each handshake message written or read, MQTT CONNECT), per "
        "configuration; the stack's total is the network-invariant cost.",
        MEASURED,
        figure,
    )


@styled
def iotst_quantum(data: ReportData, palette: Palette) -> ReportFigure | None:
    groups = data.trace_groups
    traced = traced_configurations(data)
    if groups is None or groups.empty or not traced:
        return None
    order = list(dict.fromkeys(groups.sort_values("position")["group_name"]))
    runs = groups[groups["longest_run_ns"] > 0]  # a group the client never ran in: no run
    samples = [
        runs.loc[runs["group_name"] == name, "longest_run_ns"].to_numpy(dtype=float) / 1e3
        for name in order
    ]
    figure, axis = plt.subplots(figsize=(7.5, max(2.6, 0.9 + 0.3 * len(order))))
    axis.boxplot(samples, orientation="horizontal", showfliers=True, flierprops={"ms": 2})
    axis.set_yticks(np.arange(1, len(order) + 1), order)
    axis.invert_yaxis()
    slices = {
        (d["scheduler_slice_s"], d.get("scheduler_slice_source", ""))
        for _, d in traced
        if d.get("scheduler_slice_s")
    }
    for slice_s, source in slices:
        axis.axvline(1e6 * slice_s, color="black", ls="--", lw=0.8)
        default = " (kernel default)" if source.startswith("kernel default") else ""
        axis.annotate(
            f"scheduler slice {1e3 * slice_s:g} ms{default}",
            (1e6 * slice_s, 0.02),
            xycoords=("data", "axes fraction"),
            fontsize=7,
            rotation=90,
            ha="right",
        )
    log_scale(axis, "x")
    axis.set_xlabel("longest uninterrupted on-CPU run in the group (µs, log)")
    axis.tick_params(axis="y", labelsize=7)
    return _finish(
        "iotst-quantum",
        "Quantum analysis: does a group fit in one scheduler slice?",
        "Per classification group, the longest stretch the client thread ran without being "
        "switched out, over every traced repetition of every configuration; the dashed line "
        "is the scheduler's time slice on this host (read from the kernel, or the kernel's "
        "default where it cannot be read: the JSON's scheduler_slice_source says which). A "
        "group whose runs reach the line was cut by the scheduler, not by its own I/O.",
        MEASURED,
        figure,
    )


BUILDERS = (iotst_cost, iotst_ci_width, iotst_groups, iotst_quantum)
