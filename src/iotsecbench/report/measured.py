"""The report's view of power-meter traces attached to runs (``iotsecbench attach``,
docs/meters.md): measured against modelled current over time with the residual, a table per
attached run (alignment, both currents, residual, per-phase charge) and — after
``analyze --current measured`` — the statistics of the measured current.

Every number here says which it is: *measured with <meter>* (the trace) or *modelled* (the
energy model); the two are shown side by side, never mixed. A report without an attached
trace has none of this.
"""

from __future__ import annotations

import pandas as pd

from iotsecbench.analysis.measured import per_trace
from iotsecbench.analysis.metrics import CURRENT
from iotsecbench.report.data import ReportData
from iotsecbench.report.figures import ReportFigure, _finish
from iotsecbench.report.readable import decimals_for
from iotsecbench.report.style import Palette, plt, styled
from iotsecbench.report.tables import ReportTable, TableColumn

MAX_RUNS_DRAWN = 6  # one panel pair per attached run; more would be unreadable


def _alignment(row: pd.Series) -> str:
    if row["method"] == "correlation":
        return f"correlation, r = {row['correlation']:.3f}"
    if row["method"] == "sync":
        return f"sync channel, clock ×{row['clock_ratio']:.5f}"
    return "offset given"


def per_run(data: ReportData) -> pd.DataFrame:
    """One row per attached trace (``analysis.measured.per_trace``), with the meter and its
    alignment said in words."""
    if data.meter_traces is None or data.measured is None:
        return pd.DataFrame()
    repetitions = data.runs.set_index("run_id")["repetition"] if data.runs is not None else {}
    runs = per_trace(data.meter_traces, data.measured, data.meter_phases, repetitions)
    if runs.empty:
        return runs
    runs["meter"] = [f"{f} {h[:8]}" for f, h in zip(runs["format"], runs["sha256"], strict=True)]
    runs["alignment"] = [_alignment(row) for _, row in runs.iterrows()]
    return runs


def tables(data: ReportData) -> list[ReportTable]:
    found = []
    runs = per_run(data)
    if not runs.empty:
        found.append(
            ReportTable(
                "measured",
                "Measured against modelled current",
                f"Measured with {data.meters} (power-meter traces attached to runs, "
                "integrated at the meter's full rate over the run's own sample windows), beside "
                "the modelled current of the same windows. Residual: RMS of modelled − "
                "measured per window. Charge of the handshake (all its phases), per message "
                "window and of publishing; energy only where a voltage was measured or given.",
                (
                    TableColumn("configuration", "configuration"),
                    TableColumn("run", "run"),
                    TableColumn("device", "device"),
                    TableColumn("meter", "meter"),
                    TableColumn("alignment", "aligned by"),
                    TableColumn("measured_ma", "measured", "mA", 3),
                    TableColumn("modelled_ma", "modelled", "mA", 3),
                    TableColumn("rms_residual_ma", "RMS residual", "mA", 3),
                    TableColumn("handshake_uc", "handshake", "µC", 2),
                    TableColumn("per_message_uc", "per message", "µC", 2),
                    TableColumn("publishing_mc", "publishing", "mC", 3),
                    TableColumn("publishing_mj", "publishing", "mJ", 3),
                ),
                tuple(runs.to_dict("records")),
            )
        )
    # A report of the measured current shows these in its inference table already.
    analysis = None if data.current_measured else data.measured_analysis
    comparisons = analysis.comparisons_of(CURRENT) if analysis is not None else []
    if comparisons:
        found.append(
            ReportTable(
                "measured-differences",
                "Measured current: differences of means",
                f"Measured with {data.meters} (`analyze --current measured`): "
                "mean(a) − mean(b) of the measured current with its block-bootstrap 95 % CI "
                f"({comparisons[0].reps} replicates); significant when the CI excludes 0.",
                (
                    TableColumn("device", "device"),
                    TableColumn("pair", "a − b"),
                    TableColumn("mean_a", "mean a", "mA", 5, "decimals"),
                    TableColumn("mean_b", "mean b", "mA", 5, "decimals"),
                    TableColumn("difference", "difference", "mA", 5, "decimals"),
                    TableColumn("ci_low", "CI low", "mA", 5, "decimals"),
                    TableColumn("ci_high", "CI high", "mA", 5, "decimals"),
                    TableColumn("significant", "significant"),
                ),
                tuple(
                    {
                        **c.to_dict(),
                        "pair": f"{c.a} − {c.b}",
                        "decimals": decimals_for((c.interval.high - c.interval.low) / 2 or 1e-3),
                    }
                    for c in comparisons
                ),
            )
        )
    return found


@styled
def measured_against_modelled(data: ReportData, palette: Palette) -> ReportFigure | None:
    runs = per_run(data)
    if runs.empty:
        return None
    shown = runs.head(MAX_RUNS_DRAWN)
    figure, axes = plt.subplots(
        2 * len(shown),
        1,
        figsize=(7.2, 2.4 * len(shown) + 0.4),
        sharex=True,
        squeeze=False,
        gridspec_kw={"height_ratios": [3, 1] * len(shown)},
    )
    for k, row in enumerate(shown.itertuples(index=False)):
        windows = data.measured.loc[
            (data.measured["run_id"] == row.run_id) & (data.measured["device"] == row.device)
        ]
        top, bottom = axes[2 * k][0], axes[2 * k + 1][0]
        top.plot(
            windows["time_s"], windows["measured_ma"], color=palette.color(row.configuration),
            lw=0.9, label=f"measured ({row.meter.split()[0]})",
        )  # fmt: skip
        top.plot(
            windows["time_s"], windows["modelled_ma"], color="0.35", lw=0.9, ls="--",
            label="modelled",
        )  # fmt: skip
        top.set_ylabel("mA")
        top.set_title(f"{row.configuration} · run {row.run} · {row.device}", fontsize=8)
        top.legend(fontsize=7, loc="upper right")
        bottom.axhline(0, color="0.6", lw=0.6)
        bottom.plot(
            windows["time_s"], windows["modelled_ma"] - windows["measured_ma"], color="0.2", lw=0.8
        )
        bottom.set_ylabel("model −\nmeter", fontsize=7)
    axes[-1][0].set_xlabel("time since run start (s)")
    more = (
        f" The first {MAX_RUNS_DRAWN} of {len(runs)} attached runs."
        if len(runs) > len(shown)
        else ""
    )
    return _finish(
        "measured-against-modelled",
        "Measured against modelled current",
        "Solid: the meter's current over each sample window of the run (full-rate integral); "
        "dashed: the energy model's current for the same windows; below, the residual "
        f"(modelled − measured) in mA.{more}",
        f"measured with {data.meters}",
        figure,
    )


BUILDERS = (measured_against_modelled,)
