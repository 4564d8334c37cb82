"""Figures of a comparison (``report A B …``): one panel per headline metric, each
configuration's mean over runs in each experiment with its 95 % t-interval; modelled and
measured metrics in separate figures, so each figure has one provenance."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from iotsecbench.analysis.describe import mean_t_interval
from iotsecbench.analysis.metrics import MEASURED, MODELLED
from iotsecbench.report.compare import Comparison
from iotsecbench.report.figures import EXPORTS, ReportFigure, _finish
from iotsecbench.report.style import Palette, plt, styled


@styled
def _side_by_side(comparison: Comparison, provenance: str, palette: Palette) -> ReportFigure | None:
    """One panel per metric of ``provenance``: each configuration's mean over runs in each
    experiment, with the 95 % t-interval of the mean across runs (display, not inference:
    the comparison's tables hold the bootstrap intervals of the differences)."""
    panels = [
        entry
        for entry in comparison.reference.data.metrics.across_experiments()
        if entry.kind == provenance
        and any(
            e.runs_of(c, entry.column).size
            for e in comparison.experiments
            for c in comparison.configurations
        )
    ]
    if not panels:
        return None
    columns = 2
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(7.2, 2.3 * rows + 0.4), squeeze=False)
    count = len(comparison.experiments)
    width = 0.7 / count
    positions = np.arange(len(comparison.configurations), dtype=float)
    for axis, entry in zip(axes.flat, panels, strict=False):
        for index, experiment in enumerate(comparison.experiments):
            x = positions - 0.35 + width * (index + 0.5)
            means, lows, highs = [], [], []
            for configuration in comparison.configurations:
                values = experiment.runs_of(configuration, entry.column)
                if values.size:
                    mean, low, high = mean_t_interval(values[:, None])
                    means.append(mean[0]), lows.append(low[0]), highs.append(high[0])
                else:
                    means.append(np.nan), lows.append(np.nan), highs.append(np.nan)
            colour = palette.color(experiment.label)
            axis.vlines(x, lows, highs, color=colour, lw=1.4, label=experiment.label)
            axis.plot(
                x, means, ls="none", marker="os^Dv"[index % 5], color=colour, ms=5,
                label=experiment.label,
            )  # fmt: skip
        axis.set_title(entry.role_heading().replace(f"{provenance} ", ""), fontsize=8.5)
        axis.set_ylabel(entry.unit)
        axis.set_xticks(positions)
        axis.set_xticklabels(comparison.configurations, rotation=20, ha="right", fontsize=7)
    for axis in list(axes.flat)[len(panels) :]:
        axis.set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    markers = [(h, lab) for h, lab in zip(handles, labels, strict=True) if hasattr(h, "get_marker")]
    axes[0][0].legend(*zip(*markers, strict=True), fontsize=7)
    key = f"side-by-side-{provenance}"
    title = (
        "Modelled device energy, experiment by experiment"
        if provenance == MODELLED
        else "Measured costs, experiment by experiment"
    )
    return _finish(
        key,
        title,
        "Each configuration's mean over runs in each experiment (marker) with the 95 % "
        "t-interval of that mean across runs (bar). What differs between the experiments is "
        "listed above the figures.",
        provenance,
        figure,
    )


def comparison_figures(comparison: Comparison, exports: Sequence[str] = ()) -> list[ReportFigure]:
    palette = Palette(comparison.labels)
    token = EXPORTS.set(tuple(exports))
    try:
        drawn = [_side_by_side(comparison, kind, palette) for kind in (MODELLED, MEASURED)]
    finally:
        EXPORTS.reset(token)
    return [figure for figure in drawn if figure is not None]
