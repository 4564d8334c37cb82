"""The `iotst` study's views of a traced handshake benchmark (``bench handshake --trace``,
docs/iotst.md): how fast the interval closes with repetitions, the cost per configuration with
and without the network wait beside the modelled device time, the cost per classification
group, and the longest uninterrupted run per group against the scheduler's time slice.

They read the traced runs (``runs.cost_method`` 'traced'): the per-configuration statistics
``bench handshake`` stored in their ``details_json`` and the per-connection rows of
``handshake_groups``; a report of anything else has neither, and these figures are left out. A
configuration counted on a virtual MCU (``runs.cost_method`` 'counted': ``bench handshake
--target``, docs/device-client.md) takes part in the cost, interval and group views with its
device seconds at the profile's clock — counted, and said so; the quantum view is the
scheduler's, traced only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from iotsecbench.report.data import (
    ReportData,
    counted,
    device_instructions_per_s,
    traced_configurations,
)
from iotsecbench.report.figures import ReportFigure, _finish, log_scale
from iotsecbench.report.readable import MEASURED
from iotsecbench.report.style import Palette, plt, styled

TARGET_CI = 0.01  # the study's ±1 % at 95 %


def _cost(details: dict[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """(network-invariant, with the network wait) statistics in seconds, either method."""
    if counted(details):
        device = details["device_time_s"]
        return device["network_invariant_s"], device["with_network_wait_s"]
    return details["network_invariant_cpu_s"], details["with_network_wait_s"]


def _group_seconds(details: dict[str, Any], name: str) -> float:
    """A group's network-invariant seconds: on-CPU on the host, or the device's counted
    instructions at the profile's clock."""
    if counted(details):
        group = details["groups"].get(name)
        return group["client"]["mean"] / device_instructions_per_s(details) if group else 0.0
    return details["group_states_s"].get(name, {}).get("on_cpu", 0.0)


def _provenance(traced: list[tuple[str, dict[str, Any]]]) -> str:
    kinds = {"counted on a virtual MCU" if counted(d) else MEASURED for _, d in traced}
    return MEASURED if kinds == {MEASURED} else " and ".join(sorted(kinds))


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
    traced = [
        (c, d)
        for c, d in traced_configurations(data, counted_too=True)
        if d["ci_half_width_by_repetitions"]
    ]
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
        "Relative half-width of the 95 % interval of the client's network-invariant cost "
        "(CPU time traced on this host; instructions counted on a virtual MCU, over seeds) "
        "over the first n repetitions, per configuration; the dashed line is the study's ±1 %. "
        "Where a line ends above it, more repetitions were needed.",
        _provenance(traced),
        figure,
    )


def _modelled_at_fastest(
    details: dict[str, Any],
) -> tuple[float, str, tuple[float, float] | None] | None:
    """The modelled device seconds at the profile's fastest clock on one core, a label, and
    the model's 90 % range (None in a result written before it existed)."""
    model = details.get("device_model") or {}
    table = model.get("by_clock_and_cores") or {}
    single = [entry for entry in table.values() if entry.get("cores") == 1]
    if not single:
        return None
    fastest = max(single, key=lambda entry: entry["clock_mhz"])
    ranged = fastest.get("model_range")
    ends = (ranged["low"], ranged["high"]) if ranged else None
    return (
        fastest["seconds"],
        f"{model.get('device', 'device')} @ {fastest['clock_mhz']} MHz",
        ends,
    )


@styled
def iotst_cost(data: ReportData, palette: Palette) -> ReportFigure | None:
    traced = traced_configurations(data, counted_too=True)
    if not traced:
        return None
    figure, axis, positions = _rows(len(traced))
    kinds = (
        (False, (("o", "measured: network-invariant CPU"),
                 ("s", "measured: with network wait (wall)"))),
        (True, (("^", "counted: network-invariant, at the device's clock"),
                ("v", "counted + measured network (replayed)"))),
    )  # fmt: skip
    for is_counted, series in kinds:
        chosen = [
            (p, d) for p, (_, d) in zip(positions, traced, strict=True) if counted(d) == is_counted
        ]
        if not chosen:
            continue
        for index, (marker, label) in enumerate(series):
            stats = [_cost(d)[index] for _, d in chosen]
            means = np.array([1e3 * s["mean"] for s in stats])
            low = means - np.array([1e3 * s["ci_low"] for s in stats])
            high = np.array([1e3 * s["ci_high"] for s in stats]) - means
            rows = np.array([p for p, _ in chosen]) + (-0.12 if index == 0 else 0.12)
            axis.errorbar(means, rows, xerr=[np.nan_to_num(low), np.nan_to_num(high)],
                          fmt=marker, ms=4, capsize=2, label=label)  # fmt: skip
    modelled = [None if counted(d) else _modelled_at_fastest(d) for _, d in traced]
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
        ranged = [(p, m) for p, m in shown if m[2] is not None]
        if ranged:  # the model's 90 % range: a thin line, not an interval over repetitions
            axis.hlines(
                [p for p, _ in ranged],
                [1e3 * m[2][0] for _, m in ranged],
                [1e3 * m[2][1] for _, m in ranged],
                colors="black",
                linewidths=0.6,
                label="modelled: the model's 90 % range",
            )
    log_scale(axis, "x")
    _label_rows(axis, positions, traced, "handshake time (ms, log)")
    return _finish(
        "iotst-cost",
        "Handshake cost per configuration: network-invariant, with the network, and modelled",
        "Circles: the client's on-CPU time from the scheduler trace, network waits removed "
        "(the study's Table 2 view); squares: the same handshakes' wall time, network waits "
        "included (Table 1); bars: 95 % intervals over repetitions, measured on this host. "
        "Triangles: a configuration counted on a virtual MCU — its instructions at the device "
        "profile's clock (cycles = instructions × CPI), and the same replayed against the "
        "measured network's arrivals; bars over the repetitions' seeds. Hollow diamonds are "
        "modelled, not measured: the handshake's public-key and symmetric operations priced "
        "with the device profile, the thin line through each its model's 90 % range over "
        "draws of the profile's numbers (docs/iotst.md, docs/device-client.md, "
        "docs/energy-model.md).",
        _provenance(traced),
        figure,
    )


@styled
def iotst_groups(data: ReportData, palette: Palette) -> ReportFigure | None:
    traced = traced_configurations(data, counted_too=True)
    if not traced:
        return None
    names: list[str] = []
    groups = data.handshake_groups
    if groups is not None and not groups.empty:  # in handshake order
        by_position = groups.groupby("group_name")["position"].median()
        names = list(by_position.sort_values().index)
    for _, details in traced:  # a counted configuration stores its groups' handshake order
        order = details.get("group_order") or details["groups"]
        names.extend(name for name in order if name not in names)
    colors = plt.get_cmap("tab20")(np.linspace(0, 1, max(len(names), 2)))
    figure, axis, positions = _rows(len(traced))
    left = np.zeros(len(traced))
    for color, name in zip(colors, names, strict=False):
        on_cpu = np.array([1e3 * _group_seconds(details, name) for _, details in traced])
        axis.barh(positions, on_cpu, left=left, color=color, height=0.7, label=name)
        left += on_cpu
    _label_rows(
        axis, positions, traced, "client computing per handshake (ms, mean over repetitions)"
    )
    return _finish(
        "iotst-groups",
        "Where the handshake's computing goes, by classification group",
        "Mean on-CPU time of the client thread in each group (the agent's trace markers: "
        "TCP connect, each handshake message written or read, MQTT CONNECT), per "
        "configuration; a configuration counted on a virtual MCU shows its instructions per "
        "group at the device profile's clock (the same groups, named by the messages its reads "
        "and writes completed). The stack's total is the network-invariant cost.",
        _provenance(traced),
        figure,
    )


@styled
def iotst_quantum(data: ReportData, palette: Palette) -> ReportFigure | None:
    groups = data.handshake_groups
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
