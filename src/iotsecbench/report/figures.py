"""The report's figures: every figure of the `stability` study, plus handshake phases and
bytes on the wire. Each builder takes the report data and returns a ``ReportFigure`` (or
``None`` when its data is absent); every caption says whether it shows *measured* values
(on this host) or *modelled* ones (device energy model) and what a band or line means.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from iotsecbench.analysis.describe import cumulative_mah, mean_t_interval, to_one_hertz
from iotsecbench.analysis.metrics import (
    CURRENT,
    LATENCY,
    MEASURED,
    MODELLED,
    WIRE_BYTES,
)
from iotsecbench.report.data import ReportData
from iotsecbench.report.interactive import render_svg
from iotsecbench.report.style import Palette, plt, styled

# Log axes label ticks as 0.6, 1, 2 rather than 6×10⁻¹.
PLAIN_NUMBERS = FuncFormatter(lambda value, _position: f"{value:g}")


def log_scale(axes, which: str = "y") -> None:
    """A log axis labelled at 1, 2 and 5 of each decade, in plain numbers; minor ticks
    unlabelled (labelling them all overlapped 0.4 … 0.9 on a narrow axis)."""
    getattr(axes, f"set_{which}scale")("log")
    axis = getattr(axes, f"{which}axis")
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(PLAIN_NUMBERS)
    axis.set_minor_formatter(NullFormatter())


# Vector formats build_figures was asked for (report --figures svg,pdf), for _finish to save.
EXPORTS: ContextVar[tuple[str, ...]] = ContextVar("EXPORTS", default=())
VECTOR_FORMATS = ("svg", "pdf")


@dataclass(frozen=True)
class ReportFigure:
    key: str  # stable identifier (file name, HTML anchor)
    title: str
    caption: str  # says measured/modelled and what bands and lines mean
    # MEASURED, MODELLED, "measured with <meter>" or "counted on <target> …"
    # (ReportData.current_words)
    provenance: str
    png: bytes  # the static fallback (Markdown, LaTeX, figures/<key>.png)
    svg: bytes = b""  # inline in the HTML; series carry ids the page toggles
    hover: dict = field(default_factory=dict)  # interactive.Hover.to_dict()
    exports: dict[str, bytes] = field(default_factory=dict)  # format → file (svg, pdf)


def _finish(key: str, title: str, caption: str, provenance: str, figure) -> ReportFigure:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    # The layout the PNG's draw computed stays for the SVG and the exports: constrained
    # layout measures every tick label again on each draw, ~a third of a figure's CPU.
    figure.set_layout_engine("none")
    svg, hover = render_svg(figure, key)
    exports = {"svg": svg} if "svg" in EXPORTS.get() else {}
    if "pdf" in EXPORTS.get():
        pdf = io.BytesIO()
        figure.savefig(pdf, format="pdf", metadata={"Title": title, "Creator": "iotsecbench"})
        exports["pdf"] = pdf.getvalue()
    plt.close(figure)
    label = {
        MEASURED: "Measured on this host",
        MODELLED: "Modelled device energy (docs/energy-model.md)",
    }.get(provenance, provenance[:1].upper() + provenance[1:])  # e.g. "measured with ppk2"
    return ReportFigure(
        key,
        title,
        f"{label}. {caption}",
        provenance,
        buffer.getvalue(),
        svg,
        hover.to_dict(),
        exports,
    )


def per_second(current: pd.DataFrame) -> pd.DataFrame:
    """The 1 Hz series the analysis uses (``analysis.describe.to_one_hertz``), with the
    integer second in a ``second`` column."""
    return to_one_hertz(current).rename(columns={"time_s": "second"})


def _runs_matrix(frame: pd.DataFrame, value: str) -> tuple[np.ndarray, np.ndarray]:
    """Seconds × runs matrix (NaN where a run is shorter)."""
    table = frame.pivot_table(index="second", columns="run", values=value)
    return table.index.to_numpy(dtype=float), table.to_numpy(dtype=float).T


def _devices(current: pd.DataFrame) -> list[str]:
    order = ["emitter", "receiver"]
    present = list(dict.fromkeys(current["device"]))
    return [d for d in order if d in present] + [d for d in present if d not in order]


def _mean_with_band_per_device(
    seconds: pd.DataFrame, value: str, ylabel: str, data: ReportData, palette: Palette
):
    """One panel per device: each configuration's mean across runs at every second, with a
    95 % t-band across runs."""
    devices = _devices(seconds)
    figure, axes = plt.subplots(1, len(devices), figsize=(7.2, 3.0), sharey=True, squeeze=False)
    for axis, device in zip(axes[0], devices, strict=True):
        for name in data.configurations:
            subset = seconds[(seconds["configuration"] == name) & (seconds["device"] == device)]
            if subset.empty:
                continue
            t, matrix = _runs_matrix(subset, value)
            mean, low, high = mean_t_interval(matrix)
            color = palette.color(name)
            axis.plot(t, mean, color=color, lw=1.2, ls=palette.line_style(name), label=name)
            axis.fill_between(t, low, high, color=color, alpha=0.2, lw=0)
        axis.set_title(device)
        axis.set_xlabel("time since run start (s)")
    axes[0][0].set_ylabel(ylabel)
    axes[0][-1].legend(loc="best")
    return figure


@styled
def repeatability(data: ReportData, palette: Palette) -> ReportFigure | None:
    if data.current is None or data.current.empty:
        return None
    seconds = per_second(data.current)
    figure = _mean_with_band_per_device(seconds, CURRENT, "mean current (mA)", data, palette)
    runs = int(seconds.groupby("configuration")["run"].nunique().max())
    return _finish(
        "repeatability",
        "Run repeatability",
        f"1 Hz mean current averaged over the {runs} runs of each configuration; "
        "band: 95 % t-interval across runs at each second.",
        data.current_words,
        figure,
    )


SMALL_MULTIPLES_AT_MOST = 12  # configurations drawn one row each; more: one heat map per device
MANY_ROW_INCHES = 0.14  # a row of a figure past SMALL_MULTIPLES_AT_MOST: 6-point labels


def too_many(count: int) -> bool:
    """More configurations (or comparisons) than panels, lines or a legend can tell apart:
    the figure takes its compact form (a row each, heat maps, legends below)."""
    return count > SMALL_MULTIPLES_AT_MOST


def legend_below(figure: Any, axis: Any, entries: int) -> None:
    """The legend of ``axis`` under the figure in three columns, for more lines than fit in
    a legend over the plot (it covered the panels at the payload-schemes preset's 51)."""
    figure.set_figheight(figure.get_figheight() + 0.12 * math.ceil(entries / 3))
    handles, labels = axis.get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=6, frameon=False)


@styled
def current_over_time(data: ReportData, palette: Palette) -> ReportFigure | None:
    if data.current is None or data.current.empty:
        return None
    seconds = per_second(data.current)
    names = [n for n in data.configurations if n in set(seconds["configuration"])]
    if too_many(len(names)):
        return _current_heat_maps(seconds, names, data)
    devices = _devices(seconds)
    figure, axes = plt.subplots(
        len(names),
        len(devices),
        figsize=(7.2, 1.6 * len(names) + 0.6),
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    for row, name in enumerate(names):
        for column, device in enumerate(devices):
            axis = axes[row][column]
            subset = seconds[(seconds["configuration"] == name) & (seconds["device"] == device)]
            for _run, one in subset.groupby("run"):
                smooth = _smoothed(one[CURRENT])
                axis.plot(one["second"], smooth, color=palette.color(name), lw=0.9, alpha=0.75)
            axis.set_title(f"{name} · {device}", fontsize=8)
            if column == 0:
                axis.set_ylabel("mA")
    for axis in axes[-1]:
        axis.set_xlabel("time since run start (s)")
    return _finish(
        "current-over-time",
        "Current over time",
        "Each line is one run; 5 s centred moving average of the 1 Hz series, for "
        "display only (all statistics use the raw 1 Hz series).",
        data.current_words,
        figure,
    )


def _smoothed(one_run: pd.Series) -> pd.Series:
    """A run's 1 Hz current, 5 s centred moving average: for display only (the panels and
    the heat maps draw the same)."""
    return one_run.rolling(5, center=True, min_periods=1).mean()


def _current_heat_maps(seconds: pd.DataFrame, names: list[str], data: ReportData) -> ReportFigure:
    """Current over time for more configurations than rows can be read: one heat map per
    device, a row per configuration (the mean over its runs of the same smoothed series). One
    row of panels per configuration kept a figure of the payload-schemes preset's 51
    configurations 82 inches tall."""
    smoothed = seconds.sort_values("second").assign(
        smoothed=lambda frame: frame.groupby(["configuration", "device", "run"], observed=True)[
            CURRENT
        ].transform(_smoothed)
    )
    tables = {
        device: smoothed[smoothed["device"] == device].pivot_table(
            index="configuration", columns="second", values="smoothed", aggfunc="mean"
        )
        for device in _devices(seconds)
    }
    return _finish(
        "current-over-time",
        "Current over time",
        f"{len(names)} configurations, a row each: the mean over its runs of the 5 s centred "
        "moving average of the 1 Hz series, per device on its own colour scale; for display "
        "only (all statistics use the raw 1 Hz series).",
        data.current_words,
        _heat_maps(tables, names, "mA"),
    )


def _heat_maps(tables: dict[str, pd.DataFrame], names: list[str], label: str):
    """One heat map per device (``tables``: configurations × seconds), a row per name in
    ``names``' order, each on its own colour scale labelled ``label``: a series per
    configuration when there are too many configurations for lines or panels."""
    figure, axes = plt.subplots(
        1,
        len(tables),
        figsize=(7.2, MANY_ROW_INCHES * len(names) + 1.6),
        sharey=True,
        squeeze=False,
    )
    for axis, (device, table) in zip(axes[0], tables.items(), strict=True):
        table = table.reindex(names)
        extent = (table.columns.min() - 0.5, table.columns.max() + 0.5, len(names) - 0.5, -0.5)
        image = axis.imshow(
            table.to_numpy(dtype=float), aspect="auto", interpolation="nearest", extent=extent
        )
        figure.colorbar(image, ax=axis, label=label, shrink=0.8)
        axis.grid(False)
        axis.set_title(device, fontsize=8)
        axis.set_xlabel("time since run start (s)")
    axes[0][0].set_yticks(range(len(names)), names, fontsize=6)
    return figure


def _cumulative(seconds: pd.DataFrame) -> pd.DataFrame:
    """Adds each run's running charge (mAh) to a 1 Hz series (1 s per sample)."""
    seconds = seconds.sort_values("second")
    charge = seconds.groupby(["configuration", "device", "run"], observed=True)[CURRENT]
    return seconds.assign(charge_mah=charge.transform(lambda run: cumulative_mah(run, 1.0)))


@styled
def cumulative_energy(data: ReportData, palette: Palette) -> ReportFigure | None:
    if data.current is None or data.current.empty:
        return None
    seconds = _cumulative(per_second(data.current))
    figure = _mean_with_band_per_device(
        seconds, "charge_mah", "cumulative charge (mAh)", data, palette
    )
    return _finish(
        "cumulative-energy",
        "Cumulative energy, emitter and receiver",
        "E(t) = Σ I(i)·1 s / 3600 over the 1 Hz series, mean across runs; band: 95 % "
        "t-interval across runs.",
        data.current_words,
        figure,
    )


@styled
def relative_overhead(data: ReportData, palette: Palette) -> ReportFigure | None:
    baseline = data.baseline
    if data.current is None or data.current.empty or baseline is None:
        return None
    seconds = _cumulative(per_second(data.current))
    mean = seconds.groupby(["configuration", "device", "second"], as_index=False)[
        "charge_mah"
    ].mean()
    overheads: dict[str, dict[str, pd.Series]] = {}  # device → configuration → % over time
    for device in _devices(mean):
        base = mean[(mean["configuration"] == baseline) & (mean["device"] == device)]
        base = base.set_index("second")["charge_mah"]
        for name in data.configurations:
            if name == baseline:
                continue
            other = mean[(mean["configuration"] == name) & (mean["device"] == device)]
            other = other.set_index("second")["charge_mah"]
            joined = pd.concat([other, base], axis=1, keys=["x", "b"]).dropna()
            joined = joined[joined["b"] > 0]
            if not joined.empty:
                overhead = 100 * (joined["x"] - joined["b"]) / joined["b"]
                overheads.setdefault(device, {})[name] = overhead
    names = list(dict.fromkeys(n for by in overheads.values() for n in by))
    if not names:
        return None
    caption = (
        f"100 · (E_config(t) − E_{baseline}(t)) / E_{baseline}(t) with E the mean "
        "cumulative charge across runs."
    )
    if too_many(len(names)):
        tables = {device: pd.DataFrame(by).T for device, by in overheads.items()}
        figure = _heat_maps(tables, names, f"overhead vs {baseline} (%)")
        caption += f" {len(names)} configurations, a row each, per device on its own colour scale."
    else:
        figure, axes = plt.subplots(
            1, len(overheads), figsize=(7.2, 3.0), sharey=True, squeeze=False
        )
        for axis, (device, by_name) in zip(axes[0], overheads.items(), strict=True):
            for name, overhead in by_name.items():
                axis.plot(
                    overhead.index,
                    overhead,
                    color=palette.color(name),
                    ls=palette.line_style(name),
                    lw=1.2,
                    label=name,
                )
            axis.axhline(0, color="black", lw=0.8)
            axis.set_title(device)
            axis.set_xlabel("time since run start (s)")
        axes[0][0].set_ylabel(f"overhead vs {baseline} (%)")
        axes[0][-1].legend(loc="best")
    return _finish(
        "relative-overhead",
        f"Relative cumulative overhead vs {baseline}",
        caption,
        data.current_words,
        figure,
    )


DRAWN_POINTS = 500  # a series drawn with more points than this is thinned (rank-evenly)


def rank_thinned(ordered: np.ndarray, at_most: int = DRAWN_POINTS) -> np.ndarray:
    """Indices of at most ``at_most`` elements of a sorted array, evenly spaced in rank, the
    first and the last always among them: what a drawing of a sorted sample keeps. A 7-inch
    figure shows no more, and a block-sizes run's ~10^5 messages drawn whole made a 2 MB SVG
    inside the report page and 4 s of drawing."""
    if len(ordered) <= at_most:
        return np.arange(len(ordered))
    return np.unique(np.linspace(0, len(ordered) - 1, at_most).round().astype(int))


@styled
def latency_distribution(data: ReportData, palette: Palette) -> ReportFigure | None:
    if data.latency is None or data.latency.empty:
        return None
    by_name = {
        str(name): group[LATENCY].to_numpy(float)
        for name, group in data.latency.groupby("configuration", observed=True, sort=False)
    }
    names = [n for n in data.configurations if n in by_name]
    samples = [np.sort(by_name[n]) for n in names]
    from matplotlib import cbook

    # Past a dozen configurations, a box per row and no ECDF: that many lines cannot be told
    # apart, and that many rotated labels under the boxes left the axes no room at all.
    many = too_many(len(names))
    if many:
        figure, left = plt.subplots(figsize=(7.2, MANY_ROW_INCHES * len(names) + 1.6))
    else:
        figure, (left, right) = plt.subplots(1, 2, figsize=(7.2, 3.2))
    stats = cbook.boxplot_stats(samples)  # quartiles and whiskers of every message
    thinned = False
    for box in stats:
        fliers = np.sort(box["fliers"])
        kept = fliers[rank_thinned(fliers)]
        thinned = thinned or len(kept) < len(fliers)
        box["fliers"] = kept
    parts = left.bxp(
        stats,
        showfliers=True,
        patch_artist=True,
        flierprops={"markersize": 2, "alpha": 0.4},
        orientation="horizontal" if many else "vertical",
    )
    for patch, name in zip(parts["boxes"], names, strict=True):
        patch.set_facecolor(palette.color(name))
        patch.set_alpha(0.5)
    if many:
        left.set_yticks(range(1, len(names) + 1), names, fontsize=6)
        left.invert_yaxis()
        left.set_xlabel("one-way latency (ms, log scale)")
        log_scale(left, "x")
        return _finish(
            "latency",
            "Per-message latency",
            "t_delivered − t_created per delivered message on one monotonic clock (no clock "
            f"synchronisation); boxes: quartiles, whiskers 1.5 IQR. {len(names)} "
            "configurations, a row each, without the ECDF (that many lines cannot be told "
            f"apart).{_thinning_note(thinned)}",
            MEASURED,
            figure,
        )
    left.set_xticks(range(1, len(names) + 1), names, rotation=20, ha="right")
    left.set_ylabel("one-way latency (ms)")
    log_scale(left, "y")
    left.set_title("distribution (log scale)")
    for name, ordered in zip(names, samples, strict=True):
        kept = rank_thinned(ordered)
        thinned = thinned or len(kept) < len(ordered)
        right.step(
            ordered[kept],
            (kept + 1) / len(ordered),
            where="post",
            color=palette.color(name),
            ls=palette.line_style(name),
            label=name,
        )
    log_scale(right, "x")
    right.set_xlabel("one-way latency (ms, log scale)")
    right.set_ylabel("fraction of messages ≤ x")
    right.set_title("ECDF")
    right.legend(loc="lower right")
    return _finish(
        "latency",
        "Per-message latency",
        "t_delivered − t_created per delivered message on one monotonic clock (no "
        f"clock synchronisation); boxes: quartiles, whiskers 1.5 IQR.{_thinning_note(thinned)}",
        MEASURED,
        figure,
    )


def _thinning_note(thinned: bool) -> str:
    """The latency figure's caption, when it drew fewer points than it has."""
    if not thinned:
        return ""
    return (
        f" Drawn at most {DRAWN_POINTS} points per series (fliers, ECDF steps), evenly spaced "
        "in rank with the extremes kept; quartiles, whiskers and steps are those of every "
        "message."
    )


@styled
def handshake_phases(data: ReportData, palette: Palette) -> ReportFigure | None:
    if data.handshakes is None or data.handshakes.empty:
        return None
    emitter = data.handshakes[data.handshakes["agent"] == "emitter"]
    table = emitter.groupby(["configuration", "phase"])[["wall_ns", "cpu_ns"]].mean() / 1e6
    phases = [
        p
        for p in ("tcp_connect", "tls_handshake", "mqtt_connect", "key_exchange")
        if p in set(emitter["phase"])
    ]
    names = [n for n in data.configurations if n in set(emitter["configuration"])]
    many = too_many(len(names))  # thinner bars: 51 configurations made it 28 inches tall
    row = 2 * MANY_ROW_INCHES if many else 0.5
    figure, axis = plt.subplots(figsize=(7.2, row * len(names) + 2.2))
    hatch = {"tcp_connect": "", "tls_handshake": "//", "mqtt_connect": "..", "key_exchange": "xx"}
    colors = {
        "tcp_connect": "#56B4E9",
        "tls_handshake": "#D55E00",
        "mqtt_connect": "#009E73",
        "key_exchange": "#CC79A7",
    }
    left = np.zeros(len(names))
    for phase in phases:
        wall = np.array([table["wall_ns"].get((n, phase), 0.0) for n in names])
        cpu = np.array([table["cpu_ns"].get((n, phase), 0.0) for n in names])
        axis.barh(
            names,
            wall,
            left=left,
            color=colors[phase],
            hatch=hatch[phase],
            alpha=0.45,
            edgecolor="white",
            label=f"{phase} (wall)",
        )
        axis.barh(
            names,
            np.minimum(cpu, wall),
            left=left,
            height=0.35,
            color=colors[phase],
            label=f"{phase} (CPU)",
        )
        left += wall
    axis.set_xlabel("emitter handshake time (ms); wide bar: wall, narrow bar: CPU")
    axis.invert_yaxis()
    if many:
        axis.tick_params(axis="y", labelsize=6)
    # Below the plot, centred on the figure (constrained layout makes room): centred on the
    # axes, which long configuration names push right, four entries ran off the figure.
    figure.legend(fontsize=7, ncol=2, loc="outside lower center", frameon=False)
    return _finish(
        "handshake-phases",
        "Handshake phase breakdown (emitter)",
        "Mean over runs of each phase's wall time (wide) and the CPU time spent in "
        "it (narrow); the gap is waiting (network, broker, peer).",
        MEASURED,
        figure,
    )


@styled
def bytes_per_message(data: ReportData, palette: Palette) -> ReportFigure | None:
    summary = data.summary
    if summary is None or summary.empty or WIRE_BYTES not in summary:
        return None
    runs = data.runs
    payload = runs.groupby("cell_label")["payload_bytes"].first() if runs is not None else None
    configuration = (
        runs.groupby("cell_label")["configuration"].first() if runs is not None else None
    )
    figure, axis = plt.subplots(figsize=(6.4, 3.4))
    frame = summary.assign(
        payload=summary["configuration"].map(payload),
        family=summary["configuration"].map(configuration),
    )
    for family, group in frame.groupby("family", sort=False):
        group = group.sort_values("payload")
        axis.plot(
            group["payload"],
            group[WIRE_BYTES],
            marker="o",
            color=palette.color(family),
            ls=palette.line_style(family),
            label=family,
        )
    limits = [frame["payload"].min(), frame["payload"].max()]
    axis.plot(limits, limits, color="grey", lw=0.8, ls=":", label="payload only")
    if frame["payload"].nunique() > 1:
        log_scale(axis, "x")
        log_scale(axis, "y")
    axis.set_xlabel("payload (bytes)")
    axis.set_ylabel("TCP bytes sent per message")
    axis.legend(fontsize=7)
    return _finish(
        "bytes-per-message",
        "Bytes on the wire per message",
        "Growth of the emitter's TCP_INFO bytes_sent over the publishing window per "
        "message: MQTT header, topic, scheme and TLS overhead; IP/TCP headers not "
        "included.",
        MEASURED,
        figure,
    )


BUILDERS: tuple[Callable[[ReportData, Palette], ReportFigure | None], ...] = (
    repeatability,
    current_over_time,
    cumulative_energy,
    relative_overhead,
    latency_distribution,
    handshake_phases,
    bytes_per_message,
)


def build_figures(
    data: ReportData,
    builders: Sequence[Callable[[ReportData, Palette], ReportFigure | None]] = BUILDERS,
    exports: Sequence[str] = (),
) -> tuple[list[ReportFigure], list[str]]:
    """Every figure of ``builders`` the data allows, and the names of those it does not;
    each also in the vector ``exports`` (svg, pdf) asked for."""
    palette = Palette(data.configurations)
    figures, skipped = [], []
    token = EXPORTS.set(tuple(exports))
    try:
        for builder in builders:
            figure = builder(data, palette)
            if figure is None:
                skipped.append(builder.__name__.replace("_", " "))
            else:
                figures.append(figure)
    finally:
        EXPORTS.reset(token)
    return figures, skipped
