"""Terminal rendering of the summary: rich tables grouped by topic, measured vs modelled
stated in every heading; a modelled column followed by its model range when the analysis
has one (its ``model`` section: the ranges are derived there, only shown here)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd
from rich.table import Table

from iotsecbench.analysis.metrics import GROUPS, METRICS, Metric, Registry
from iotsecbench.analysis.model_range import ModelSection, ModelValue

if TYPE_CHECKING:  # the findings' module imports the bootstraps (arch, scipy, matplotlib): a
    # `run --no-report` prints its tables with this module and never needs them
    from iotsecbench.report.findings import Findings


def _format(value: object, metric: Metric) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{float(value):,.{metric.digits}f}"  # type: ignore[arg-type]


def summary_tables(
    frame: pd.DataFrame,
    registry: Registry = METRICS,
    target: str | None = None,
    model: ModelSection | None = None,
) -> list[Table]:
    """One table per group of the registry (``analysis.metrics.GROUPS``) that has a value;
    ``target``: the emitter was the device client on that virtual MCU (``run --target``), and
    the titles say which of its figures are counted there; with ``model`` (the analysis'
    ranges), each column it ranges is followed by a "model 90 %" column."""
    tables = []
    names = [str(name) for name in frame["configuration"]] if "configuration" in frame else []
    for group in GROUPS:
        metrics = registry.in_group(group.key)
        if not any(m.column in frame and frame[m.column].notna().any() for m in metrics):
            continue  # e.g. no echo and no tcp run: the per-byte group says nothing
        table = Table(title=group.title_for(target), title_justify="left", header_style="bold")
        table.add_column("configuration", no_wrap=True)
        columns = []
        for m in metrics:
            table.add_column(f"{m.title}\n{m.unit}".rstrip(), justify="right")
            columns.append([_format(row.get(m.column), m) for _, row in frame.iterrows()])
            ranges = [model.value(name, m.role, m.key) if model else None for name in names]
            if any(ranges):
                level = next(r for r in ranges if r).model_range.level
                table.add_column(f"model {level * 100:.0f} %\n{m.unit}".rstrip(), justify="right")
                columns.append([_range(r, m) for r in ranges])
        for index, name in enumerate(names):
            table.add_row(name, *(column[index] for column in columns))
        tables.append(table)
    return tables


def _range(value: ModelValue | None, metric: Metric) -> str:
    if value is None:
        return "–"
    interval = value.model_range
    return f"{interval.low:,.{metric.digits}f}–{interval.high:,.{metric.digits}f}"


def warning_lines(frame: pd.DataFrame) -> list[str]:
    return [
        f"{row['configuration']}: {row['warnings']}"
        for _, row in frame.iterrows()
        if row.get("warnings")
    ]


def finding_lines(findings: Findings) -> list[str]:
    """The report's findings as the lines that end the terminal summary: each sentence with
    its caveat, then the Pareto front and the sample-size notes."""
    lines = []
    for finding in findings.items:
        caveat = f" [dim]{finding.caveat}[/]" if finding.caveat else ""
        lines.append(f"[bold]{finding.kind}[/] {finding.sentence}{caveat}")
    if findings.pareto:
        lines.append(findings.pareto)
    lines += [f"[yellow]{note}[/]" for note in findings.notes]
    return lines
