"""The report's tables as plain records, rendered by every exporter the same way."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from iotsecbench.analysis.counted_runs import emitters_over_runs
from iotsecbench.analysis.metrics import ROLES
from iotsecbench.report.compare import Comparison, Contrast
from iotsecbench.report.data import ReportData
from iotsecbench.report.readable import decimals_for, metric


@dataclass(frozen=True)
class TableColumn:
    key: str
    title: str
    unit: str = ""
    digits: int | None = None  # None: text
    digits_key: str | None = None  # a row field holding this row's digits (set by its interval)
    # Text a reader sees for a value the CSV keeps as data (a metric key and its row → its
    # name, which may depend on the row's role).
    shown: Callable[[Any, dict[str, Any]], str] | None = None
    # A (low, high) range: text shows "low–high", the CSV keeps two numbers (key_low, key_high).
    pair: bool = False

    def format(self, value: Any, row: dict[str, Any] | None = None) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "–"
        if self.shown is not None:
            return self.shown(value, row or {})
        digits = self.digits
        if self.digits_key is not None and row is not None and self.digits_key in row:
            digits = int(row[self.digits_key])
        if self.pair:
            low, high = value
            return f"{float(low):.{digits}f}–{float(high):.{digits}f}"
        if digits is None:
            if isinstance(value, bool):
                return "yes" if value else "no"
            return str(value)
        return f"{float(value):.{digits}f}"


@dataclass(frozen=True)
class ReportTable:
    key: str  # file name and anchor
    title: str
    note: str  # what the numbers are: measured/modelled, method
    columns: tuple[TableColumn, ...]
    rows: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    def cells(self) -> list[list[str]]:
        return [
            [column.format(row.get(column.key), row) for column in self.columns]
            for row in self.rows
        ]


def summary_table(data: ReportData) -> ReportTable | None:
    if data.summary is None or data.summary.empty:
        return None
    summary = data.summary
    rows = [dict(row) for row in summary.to_dict("records")]
    columns: list[TableColumn] = [TableColumn("configuration", "configuration")]
    ranged = False
    for m in data.metrics.in_summary():
        # Columns no run has data for (e.g. echo round trips of mqtt runs) are left out.
        if m.column not in summary or not summary[m.column].notna().any():
            continue
        columns.append(TableColumn(m.column, m.title, m.unit, m.digits))
        # A modelled column's model range (analysis.json's model section), beside it.
        model = data.analysis if not data.current_measured else None
        found = [
            model.model_value(row["configuration"], m.role, m.key) if model else None
            for row in rows
        ]
        if any(found):
            ranged = True
            key = f"{m.column}_model_range"
            for row, value in zip(rows, found, strict=True):
                interval = value.model_range if value is not None else None
                row[key] = (interval.low, interval.high) if interval is not None else None
            columns.append(TableColumn(key, f"{m.title} model 90 %", m.unit, m.digits, pair=True))
    note = (
        "Means over runs. Handshake (emitter), latency, CPU, bytes and memory are measured on "
        "this host; current and charge are modelled for the device (docs/energy-model.md)."
    )
    if data.counted_target is not None:
        counted = ", ".join(
            m.title for m in data.metrics.in_summary() if m.kind.startswith("counted")
        )
        note = (
            f"Means over runs. The emitter was the device client on {data.counted_target}: "
            f"its {counted} are counted on {data.counted_target} (instructions x CPI / clock "
            "into the device model; heap and image of the firmware; docs/device-client.md). "
            "Handshake times, latency, bytes and the receiver's CPU and memory are measured on "
            "this host; the receiver's current and charge are modelled."
        )
    if ranged:
        note += (
            " A modelled column's “model 90 %” is the central 90 % of the value over "
            "draws of the device profile's ranges (the model's uncertainty, not the runs')."
        )
    if ranged and data.counted_target is not None:
        note += (
            " The emitter's counted columns' range is the CPI's (the count × each draw of "
            "the CPI) with the profile's currents."
        )
    return ReportTable("summary", "Summary per configuration", note, tuple(columns), tuple(rows))


def cv_table(data: ReportData) -> ReportTable | None:
    if data.analysis is None or not data.analysis.cv:
        return None
    rows = tuple(
        {
            "configuration": e.configuration,
            "device": e.device,
            "metric": e.metric,
            "cv_runs": _percent(e.cv_across_runs),
            "cv_segments": _percent(e.segment_cv_mean),
            "runs": len(e.run_means),
        }
        for e in data.analysis.cv
    )
    segments = data.analysis.options.get("segments", 5)
    return ReportTable(
        "cv",
        "Coefficient of variation",
        f"CV = SD/mean: across the per-run means, and the mean over runs of the CV across "
        f"{segments} contiguous segments of each run (the study's reliability measures).",
        (
            TableColumn("configuration", "configuration"),
            TableColumn("device", "device"),
            TableColumn(
                "metric",
                "metric",
                shown=lambda key, row: data.metric_of(key, row.get("device")).heading(),
            ),
            TableColumn("runs", "runs", "", 0),
            TableColumn("cv_runs", "CV across runs", "%", 2),
            TableColumn("cv_segments", "CV across segments", "%", 2),
        ),
        rows,
    )


def _percent(value: Any) -> float | None:
    return None if value is None else 100.0 * float(value)


def inference_table(data: ReportData) -> ReportTable | None:
    comparisons = data.analysis.comparisons if data.analysis is not None else []
    if not comparisons:
        return None
    rows = tuple(
        {
            **c.to_dict(),
            "metric_name": data.metric_of(c.metric, c.device).heading(),
            "decimals": decimals_for(
                (c.interval.high - c.interval.low) / 2 or abs(c.difference) / 10
            ),
            "pair": f"{c.a} − {c.b}",
            "method_text": c.method
            if c.block_length is None
            else f"{c.method}, b={c.block_length}",
            "model_low": c.model_range.low if c.model_range is not None else None,
            "model_high": c.model_range.high if c.model_range is not None else None,
            # in percent here (the CSV's header says so); a share in analysis.json
            "model_share": 100 * c.model_share if c.model_share is not None else None,
        }
        for c in comparisons
    )
    reps = comparisons[0].reps
    modelled = any(c.model_range is not None for c in comparisons)
    model_columns = (
        (
            TableColumn("model_low", "model 90 % low", "", 5, "decimals"),
            TableColumn("model_high", "model 90 % high", "", 5, "decimals"),
            TableColumn("model_share", "a above b in draws", "%", 0),
        )
        if modelled
        else ()
    )
    return ReportTable(
        "inference",
        "Pairwise differences of means",
        f"Difference = mean(a) − mean(b); 95 % percentile bootstrap CI ({reps} replicates); "
        "significant when the CI excludes 0; Cohen's d with pooled SD. Current and energy are "
        "modelled, latency measured; each difference in its metric's unit, rounded so the "
        "interval's half-width keeps two significant digits (the CSV keeps every digit)."
        + (
            " A modelled difference's model 90 % range is the central 90 % of the difference "
            "over draws of the device profile's ranges, every configuration on the same draws; "
            "the last column is the share of those draws in which a is above b."
            if modelled
            else ""
        ),
        (
            TableColumn("metric_name", "metric"),
            TableColumn("device", "device"),
            TableColumn("pair", "a − b"),
            TableColumn("difference", "difference", "", 5, "decimals"),
            TableColumn("ci_low", "CI low", "", 5, "decimals"),
            TableColumn("ci_high", "CI high", "", 5, "decimals"),
            TableColumn("significant", "significant"),
            TableColumn("cohens_d", "Cohen's d", "", 2),
            TableColumn("effect", "effect"),
            *model_columns,
            TableColumn("method_text", "method"),
        ),
        rows,
    )


def counted_table(data: ReportData) -> ReportTable | None:
    """A ``run --target`` experiment's device figures per configuration, counted on the
    target (``analysis.counted_runs``): what the terminal summary says, in a table."""
    figures = emitters_over_runs(data.runs) if data.runs is not None else []
    if not figures:
        return None
    rows = []
    for figure in figures:
        connection, exchange = figure.connection, figure.key_exchange or {}
        groups = connection.group_shares() if connection else []
        primitives = dict(connection.primitive_shares()) if connection else {}
        rows.append(
            {
                "configuration": figure.label,
                "runs": figure.runs,
                "set_up": connection.instructions / 1e6 if connection else None,
                "largest_group": f"{groups[0][0]} {groups[0][1]:.0%}" if groups else None,
                # no shares of no instructions: then no column either
                "public_key": 100 * primitives.get("pk", 0) if groups else None,
                "key_exchange": exchange["instructions"] / 1e6 if exchange else None,
                "key_exchange_stack": exchange.get("stack_high_water_bytes"),
                "key_exchange_heap": exchange.get("heap_peak_bytes"),
                "emitter_counted": figure.counted_current_ma,
                "emitter_priced": figure.priced_current_ma,
            }
        )
    target = figures[0].target
    return ReportTable(
        "counted",
        f"Counted on {target}",
        f"The device client's firmware under QEMU, every instruction counted (mean of each "
        "configuration's runs): the connection's set-up from the first handshake mark to the "
        "CONNACK, network-invariant, with its largest group and the public-key share; a payload "
        "scheme's key exchange with its stack and heap peaks; the emitter's current from the "
        f"counts (instructions × CPI {figures[0].cpi:g} / clock into the device model) beside "
        "the same samples priced by the profile's operations (docs/device-client.md).",
        (
            TableColumn("configuration", "configuration"),
            TableColumn("runs", "runs"),
            TableColumn("set_up", "set-up", "M instructions", 3),
            TableColumn("largest_group", "largest group"),
            TableColumn("public_key", "public key", "%", 0),
            TableColumn("key_exchange", "key exchange", "M instructions", 2),
            TableColumn("key_exchange_stack", "its stack peak", "B", 0),
            TableColumn("key_exchange_heap", "its heap peak", "B", 0),
            TableColumn("emitter_counted", "emitter current counted", "mA", 2),
            TableColumn("emitter_priced", "priced", "mA", 2),
        ),
        tuple(rows),
    )


def build_tables(data: ReportData) -> list[ReportTable]:
    tables = (summary_table(data), counted_table(data), cv_table(data), inference_table(data))
    return [t for t in tables if t]


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_")


def _contrast_heading(c: Contrast) -> str:
    """ "emitter modelled current (mA)"; taken differently in the experiments, the kind is
    left to the kind column: "emitter current (mA)"."""
    about = dataclasses.replace(metric(c.metric), role=c.role, kind=c.kind)
    if not c.reference_kind:
        return about.role_heading()
    heading = f"{about.name} ({about.unit})" if about.unit else about.name
    return f"{c.role} {heading}" if c.role in ROLES else heading


def _contrast_table(comparison: Comparison, kind: str) -> ReportTable | None:
    """Rows: configuration × metric; a value column per experiment, then per experiment
    after the first its difference from the reference with the interval."""
    contrasts = [c for c in comparison.contrasts if c.kind_of_contrast == kind]
    if not contrasts:
        return None
    reference = comparison.reference.label
    others = comparison.labels[1:]
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    kinds: dict[tuple[str, str, str], dict[str, str]] = {}  # per row: experiment → its kind
    for c in contrasts:
        row = rows.setdefault(
            (c.configuration, c.metric, c.role),
            {
                "configuration": c.configuration,
                # taken differently in the experiments, the kind column says how in each
                "metric_name": _contrast_heading(c),
                f"value_{_slug(reference)}": c.reference_value,
            },
        )
        taken = kinds.setdefault((c.configuration, c.metric, c.role), {})
        taken[reference] = c.reference_kind or c.kind
        taken[c.experiment] = c.kind
        row["kind"] = (
            c.kind
            if len(set(taken.values())) == 1
            else "; ".join(f"{label}: {kind}" for label, kind in taken.items())
        )
        half = (c.interval.high - c.interval.low) / 2
        row["decimals"] = max(row.get("decimals", 0), decimals_for(half or abs(c.difference) / 10))
        row[f"value_{_slug(c.experiment)}"] = c.value
        row[f"difference_{_slug(c.experiment)}"] = c.difference
        row[f"ci_low_{_slug(c.experiment)}"] = c.interval.low
        row[f"ci_high_{_slug(c.experiment)}"] = c.interval.high
        row[f"relative_{_slug(c.experiment)}"] = c.relative_percent
    value = "value" if kind == "value" else "cost over the baseline"
    columns = [
        TableColumn("configuration", "configuration"),
        TableColumn("metric_name", "metric"),
        *(
            TableColumn(f"value_{_slug(label)}", f"{value}, {label}", "", 5, "decimals")
            for label in comparison.labels
        ),
    ]
    for label in others:
        columns += [
            TableColumn(f"difference_{_slug(label)}", f"{label} − {reference}", "", 5, "decimals"),
            TableColumn(f"ci_low_{_slug(label)}", "CI low", "", 5, "decimals"),
            TableColumn(f"ci_high_{_slug(label)}", "CI high", "", 5, "decimals"),
            TableColumn(f"relative_{_slug(label)}", "relative", "%", 1),
        ]
    if kind == "value":
        key, title = "side-by-side", "Each configuration in each experiment"
        note = (
            "Mean over runs in each experiment, and its difference from the reference "
            f"experiment {reference} with a 95 % interval (i.i.d. bootstrap over runs, "
            "expanded percentile). Modelled rows come from the device energy model of each "
            "experiment's profile; measured rows were measured on each experiment's host."
        )
    else:
        key, title = (
            "cost-change",
            "What each configuration costs over the baseline, per experiment",
        )
        note = (
            "Cost = mean(configuration) − mean(baseline) within an experiment; the difference "
            f"column is how much that cost changes from {reference} to the other experiment, "
            "with a 95 % interval (runs of the four groups resampled independently)."
        )
    return ReportTable(key, title, note, tuple(columns), tuple(rows.values()))


def conditions_table(comparison: Comparison) -> ReportTable:
    rows = tuple(
        {
            "setting": setting,
            **{_slug(label): v for label, v in zip(comparison.labels, values, strict=True)},
        }
        for setting, values in comparison.differences
    )
    return ReportTable(
        "conditions",
        "What differs between the experiments",
        "Every spec setting, host fact and software version that is not the same in all "
        "experiments (settings alike everywhere are left out).",
        (
            TableColumn("setting", "setting"),
            *(TableColumn(_slug(label), label) for label in comparison.labels),
        ),
        rows,
    )


def comparison_tables(comparison: Comparison) -> list[ReportTable]:
    tables = [conditions_table(comparison)]
    return tables + [t for t in (_contrast_table(comparison, k) for k in ("value", "cost")) if t]
