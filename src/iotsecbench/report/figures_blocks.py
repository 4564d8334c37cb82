"""The block-sizes study's figures: a metric per run against the block size (payload bytes per
message), one panel per method, one line per configuration — energy per payload byte,
instructions per payload byte (counted on a virtual MCU) and throughput. Each is None without
two block sizes (``report.figures.build_figures`` names it skipped)."""

from __future__ import annotations

import textwrap

import numpy as np

from iotsecbench.analysis.metrics import (
    ENERGY_PER_BYTE,
    INSTRUCTIONS_PER_BYTE,
    MEASURED,
    METRICS,
    THROUGHPUT,
    Metric,
)
from iotsecbench.report.data import ReportData
from iotsecbench.report.figures import ReportFigure, _finish, log_scale
from iotsecbench.report.style import Palette, plt, styled


def _block_panels(data: ReportData, palette: Palette, entry: Metric) -> plt.Figure | None:
    """One panel per method, one line per configuration: a metric per run (mean over runs) —
    one the runner stored, or one the per-run frame derived — against the block size
    (payload per message), log-log. None without two block sizes."""
    (column,) = entry.sources or (entry.column,)
    runs = data.runs
    if runs is not None and not entry.sources and data.per_run is not None:
        if column not in data.per_run:
            return None
        runs = runs.merge(data.per_run[["run_id", column]], on="run_id", how="left")
    if runs is None or column not in runs or runs["payload_bytes"].nunique() < 2:
        return None
    runs = runs[(runs["status"] == "ok") & runs[column].notna()]
    if runs.empty:
        return None
    methods = list(dict.fromkeys(runs["method"].fillna("unidirectional")))
    figure, axes = plt.subplots(1, len(methods), figsize=(3.6 * len(methods) + 0.6, 3.4))
    axes = np.atleast_1d(axes)
    for axis, method in zip(axes, methods, strict=True):
        subset = runs[runs["method"].fillna("unidirectional") == method]
        for configuration, group in subset.groupby("configuration", sort=False):
            means = group.groupby("payload_bytes")[column].mean().sort_index()
            axis.plot(
                means.index,
                means.to_numpy(),
                marker="o",
                color=palette.color(configuration),
                ls=palette.line_style(configuration),
                label=configuration,
            )
        log_scale(axis, "x")
        log_scale(axis, "y")
        axis.set_title(method)
        axis.set_xlabel("block size (payload bytes per message)")
    # "emitter energy per payload byte counted on rv32imc (µJ/B)" would run off the figure
    axes[0].set_ylabel("\n".join(textwrap.wrap(entry.role_heading(), 36)))
    axes[-1].legend(fontsize=7)
    return figure


@styled
def energy_per_byte(data: ReportData, palette: Palette) -> ReportFigure | None:
    entry = data.metrics.column(ENERGY_PER_BYTE)
    figure = _block_panels(data, palette, entry)
    if figure is None:
        return None
    paced = (
        " A saturating device emitter's (counted) is at the device's own pace: each window as "
        "long as its counted CPU time or its radio's airtime, whichever is longer (QEMU "
        "outruns the device's clock)."
        if data.counted_target is not None
        else ""
    )
    return _finish(
        "energy-per-byte",
        "Energy per payload byte against block size (the block-sizes study)",
        "Device energy of the emitter over the run, V·ΣI·Δt, divided by the payload "
        f"bytes delivered (frame and crypto headers excluded), mean over runs; one panel per "
        f"method.{paced}",
        entry.kind,
        figure,
    )


@styled
def instructions_per_byte(data: ReportData, palette: Palette) -> ReportFigure | None:
    entry = data.metrics.column(INSTRUCTIONS_PER_BYTE)
    figure = _block_panels(data, palette, entry)
    if figure is None:
        return None
    return _finish(
        "instructions-per-byte",
        "Instructions per payload byte against block size (the block-sizes study, counted)",
        "The device emitter's client instructions for its blocks — each from its creation to "
        "its frame sent (echo: to its echo opened), the key exchange apart — divided by their "
        "payload bytes, mean over runs; one panel per method. A saturating run on a virtual "
        "MCU sends as fast as QEMU emulates, so its rate and throughput are the emulator's: "
        "this count is the device's figure.",
        entry.kind,
        figure,
    )


@styled
def throughput_per_block(data: ReportData, palette: Palette) -> ReportFigure | None:
    figure = _block_panels(data, palette, METRICS.column(THROUGHPUT))
    if figure is None:
        return None
    return _finish(
        "throughput-per-block",
        "Throughput against block size",
        "Payload bytes delivered per second from the first block created to the last "
        "delivered, on this host (saturating runs: as fast as the link and CPU allowed"
        + (
            "; a device emitter's as fast as QEMU emulated it: the emulator's pace, not the "
            f"device's — its figure is the instructions per byte counted on {data.counted_target}"
            if data.counted_target is not None
            else ""
        )
        + ").",
        MEASURED,
        figure,
    )


BUILDERS = (energy_per_byte, instructions_per_byte, throughput_per_block)
