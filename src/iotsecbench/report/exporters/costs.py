"""What each configuration costs over the baseline, with the analysis' interval: the numbers
the CI-dashboard formats (bencher.py, github_action_benchmark.py) carry, read from the
report's typed findings (report/findings.py) — one per configuration, metric and role, the
same values and intervals the report's first page states — and named, with their direction,
by the metric registry (analysis.metrics).

This module is the one place those formats read a finding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from iotsecbench.analysis.metrics import Registry
from iotsecbench.errors import SpecError
from iotsecbench.report import data as report_data
from iotsecbench.report.findings import Finding, find
from iotsecbench.store.read import require_completed_runs


@dataclass(frozen=True)
class Cost:
    """``value`` = the configuration's mean − the baseline's, in ``unit``, inside
    [``low``, ``high``] at ``level`` (None: the analysis has no interval for it)."""

    configuration: str
    baseline: str
    measure: str  # "emitter modelled current (mA)": role, kind, metric and unit
    unit: str
    value: float
    low: float | None
    high: float | None
    level: float
    method: str  # how the interval was made
    runs: int  # the fewer runs of the configuration and the baseline
    lower_is_better: bool
    sentence: str  # the report's sentence of it


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def cost(finding: Finding, metrics: Registry) -> Cost | None:
    """The finding's cost, or None when it has no value (nothing to track)."""
    if not math.isfinite(finding.difference):
        return None
    entry = metrics.of(finding.metric, finding.role) or metrics.metric(finding.metric)
    entry = entry.with_current(finding.kind) if entry.follows_current else entry
    interval = finding.interval
    return Cost(
        configuration=finding.configuration,
        baseline=finding.baseline,
        measure=entry.role_heading(),
        unit=finding.unit,
        value=finding.difference,
        low=_finite(interval.low),
        high=_finite(interval.high),
        level=interval.level,
        method=interval.method,
        runs=finding.runs,
        # A metric neither way better (the registry's None) is tracked as a cost: a rise is
        # what a dashboard should show.
        lower_is_better=entry.lower_is_better is not False,
        sentence=finding.sentence,
    )


def costs(results_dir: Path) -> list[Cost]:
    """Every configuration's costs over the experiment's baseline (``analysis.json``'s when
    `analyze` ran: its current and charge comparisons; the over-runs ones always)."""
    require_completed_runs(results_dir)  # DataError (exit 4): nothing measured to export
    data = report_data.load(results_dir)
    found = [c for c in (cost(f, data.metrics) for f in find(data).items) if c is not None]
    if not found:
        why = (
            "a CI format tracks costs over a baseline: run at least two configurations (the "
            "first is the baseline)"
            if len(data.configurations) < 2
            else "a cost needs 2 or more ok runs of a configuration and of the baseline "
            "(--reps), or, for current and charge, `iotsecbench analyze` first"
        )
        raise SpecError(f"{results_dir}: no cost over the baseline to export; {why}")
    return found
