"""The headline figure: the findings seen before they are read. One panel per headline
metric, one row per configuration: its change against the baseline in % of the baseline's
value, with the finding's interval (a forest plot). Drawn from the typed findings
(``report.findings.Findings``), so it shows exactly the numbers the sentences say."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import SymLogNorm
from matplotlib.ticker import MaxNLocator

from iotsecbench.analysis.metrics import metric
from iotsecbench.report.figures import MANY_ROW_INCHES, ReportFigure, _finish, too_many
from iotsecbench.report.findings import MIN_RUNS, Finding, Findings
from iotsecbench.report.readable import configuration_name, role_phrase
from iotsecbench.report.style import Palette, plt, styled

KEY = "headline"


def _shown(finding: Finding) -> bool:
    """A relative change exists: the baseline is not 0 and the difference is a number."""
    return finding.relative_interval is not None and math.isfinite(finding.relative_percent)


def _relative_model_range(finding: Finding) -> tuple[float, float] | None:
    """The finding's model range in % of the baseline's magnitude, if it has one."""
    if finding.model_range is None or not finding.baseline_value:
        return None
    scaled = finding.model_range.scaled(100.0 / abs(finding.baseline_value))
    return scaled.low, scaled.high


def _panel_title(finding: Finding) -> str:
    """ "the emitter's modelled current" → "emitter modelled current" """
    what = f"{role_phrase(finding.role)} {metric(finding.metric, finding.kind).described}"
    return what.removeprefix("the ").replace("'s ", " ", 1)


@styled
def headline(findings: Findings, palette: Palette) -> ReportFigure | None:
    """Every finding's relative change with its interval; None without a finding to show."""
    shown = [f for f in findings.items if _shown(f)]
    if not shown or findings.baseline is None:
        return None
    panels = list(dict.fromkeys((f.metric, f.role) for f in shown))
    configurations = list(dict.fromkeys(f.configuration for f in shown))
    by_key = {(f.metric, f.role, f.configuration): f for f in shown}
    if too_many(len(configurations)):
        return _heat_map(findings, [[by_key.get((*p, c)) for p in panels] for c in configurations])
    columns = 2 if len(panels) > 1 else 1
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(7.2, rows * (0.28 * len(configurations) + 1.05) + 0.3),
        sharey=True,
        squeeze=False,
    )
    positions = {c: len(configurations) - 1 - i for i, c in enumerate(configurations)}
    baseline = configuration_name(findings.baseline)
    for axis, (key, role) in zip(axes.flat, panels, strict=False):
        for configuration in configurations:
            finding = by_key.get((key, role, configuration))
            if finding is None:
                continue
            interval = finding.relative_interval
            assert interval is not None  # _shown
            y, colour = positions[configuration], palette.color(configuration)
            label = configuration_name(configuration)
            model = _relative_model_range(finding)
            if model is not None:  # the model's range: a thin bar under the runs' interval
                axis.hlines(y - 0.22, *model, color=colour, lw=0.9, alpha=0.8)
            axis.hlines(y, interval.low, interval.high, color=colour, lw=2.2, label=label)
            axis.plot(
                [finding.relative_percent], [y], ls="none", marker="o", ms=5.5, color=colour,
                markerfacecolor=colour if finding.significant else "white", label=label,
            )  # fmt: skip
        axis.axvline(0, color="black", lw=0.8)
        sample = next(f for f in shown if (f.metric, f.role) == (key, role))
        axis.set_title(_panel_title(sample), fontsize=8)
        axis.tick_params(axis="x", labelsize=7)
        axis.xaxis.set_major_locator(MaxNLocator(5))
        axis.margins(x=0.08)
        axis.set_ylim(-0.7, len(configurations) - 0.3)
    for axis in list(axes.flat)[len(panels) :]:
        axis.set_visible(False)
    for axis in axes[:, 0]:
        axis.set_yticks(
            [positions[c] for c in configurations],
            [configuration_name(c) for c in configurations],
            fontsize=7,
        )
    for axis in axes[-1]:
        axis.set_xlabel(f"change against {baseline} (%)", fontsize=7.5)
    return _finish(
        KEY,
        f"Each configuration against {baseline}",
        "One panel per headline metric: the change against the baseline in % of the "
        "baseline's value (marker) with its 95 % interval (bar); a filled marker's interval "
        "excludes no change, a hollow one's does not. "
        + _METHODS
        + (
            "Under a modelled metric's bar, a thin one is the model's 90 % range (the device "
            "profile's uncertainty, drawn from its ranges). "
            if any(_relative_model_range(f) is not None for f in shown)
            else ""
        )
        + _closing(shown),
        " and ".join(sorted({f.kind for f in shown})),
        figure,
    )


_METHODS = (
    "Current and charge: the analysis' block bootstrap within runs; the others one value per "
    "run, bootstrapped over runs. "
)


def _closing(shown: list[Finding]) -> str:
    few = any(not f.enough_runs for f in shown)
    return "The sentences below say the same in numbers." + (
        f" Intervals over fewer than {MIN_RUNS} runs are indicative." if few else ""
    )


def _heat_map(findings: Findings, grid: list[list[Finding | None]]) -> ReportFigure:
    """Past a dozen configurations (a forest of 51 rows per panel was 75 inches tall): a
    cell per configuration and headline metric, its change in % of the baseline on one
    diverging colour scale, symmetric-log so that +0.1 % and +300 % both show; a cell whose
    interval holds no change is pale, its number grey."""
    shown = [f for row in grid for f in row if f is not None]
    # A finding of each column names it, one of each row its configuration.
    columns = [next(f for f in column if f is not None) for column in zip(*grid, strict=True)]
    rows = [next(f for f in row if f is not None).configuration for row in grid]
    values = np.array([[f.relative_percent if f else np.nan for f in row] for row in grid])
    limit = max(float(np.nanmax(np.abs(values))), 1.0)
    norm = SymLogNorm(linthresh=1.0, vmin=-limit, vmax=limit, base=10)
    cmap = plt.get_cmap("RdBu_r")
    colours = cmap(norm(np.nan_to_num(values)))
    cells = [(i, j, f) for i, row in enumerate(grid) for j, f in enumerate(row) if f is not None]
    colours[:, :, 3] = 0.0  # no finding: no cell
    for i, j, finding in cells:
        colours[i, j, 3] = 1.0 if finding.significant else 0.3
    figure, axis = plt.subplots(figsize=(7.2, MANY_ROW_INCHES * len(rows) + 2.2))
    axis.imshow(colours, aspect="auto", interpolation="nearest")
    for i, j, finding in cells:
        value = finding.relative_percent
        strong = finding.significant and abs(norm(value) - 0.5) > 0.35
        axis.text(
            j, i, f"{value:+.0f}" if abs(value) >= 9.5 else f"{value:+.1f}",
            ha="center", va="center", fontsize=5,
            color=("white" if strong else "black") if finding.significant else "0.45",
        )  # fmt: skip
    axis.set_xticks(
        range(len(columns)), [_panel_title(f) for f in columns], fontsize=6, rotation=40,
        ha="left", rotation_mode="anchor",
    )  # fmt: skip
    axis.xaxis.tick_top()
    axis.set_yticks(range(len(rows)), [configuration_name(c) for c in rows], fontsize=6)
    axis.grid(False)
    figure.colorbar(
        ScalarMappable(norm=norm, cmap=cmap),
        ax=axis,
        label=f"change against {configuration_name(findings.baseline or '')} (%), "
        "symmetric log scale",
        location="bottom",
        shrink=0.7,
        aspect=40,
        pad=0.02,
    )
    return _finish(
        KEY,
        f"Each configuration against {configuration_name(findings.baseline or '')}",
        f"{len(rows)} configurations, a row each, and a column per headline metric: the change "
        "against the baseline in % of the baseline's value (its interval is in the sentences "
        "and tables below); a pale cell with a grey number: its 95 % interval holds no change. "
        + _METHODS
        + _closing(shown),
        " and ".join(sorted({f.kind for f in shown})),
        figure,
    )
