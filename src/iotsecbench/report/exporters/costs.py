"""What each configuration costs, with the analysis' interval: the numbers the CI-dashboard
formats (bencher.py, github_action_benchmark.py) carry.

- A `run` experiment: each configuration's cost over the baseline, read from the report's
  typed findings (report/findings.py) — one per configuration, metric and role, the same
  values and intervals the report's first page states — and named, with their direction, by
  the metric registry (analysis.metrics).
- A `bench handshake` store, traced (``--trace``) or counted (``--target``): each
  configuration's network-invariant handshake cost itself (the handshake is the cost; there
  is no baseline to subtract), with the Student-t interval over its repetitions or seeds that
  the benchmark stored — CPU time measured on this host, or the device client's instructions
  counted on a virtual MCU (what a firmware's CI tracks per commit).

This module is the one place those formats read a finding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from iotsecbench.analysis.metrics import Registry
from iotsecbench.errors import SpecError
from iotsecbench.report import data as report_data
from iotsecbench.report.data import ReportData, counted, traced_configurations
from iotsecbench.report.findings import Finding, find
from iotsecbench.store.read import require_completed_runs


@dataclass(frozen=True)
class Cost:
    """``value`` = the configuration's mean − the baseline's, in ``unit``, inside
    [``low``, ``high``] at ``level`` (None: the analysis has no interval for it)."""

    configuration: str
    baseline: str | None  # None: the configuration's own cost (bench handshake)
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
    found += handshake_costs(data)
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


@dataclass(frozen=True)
class HandshakeMeasure:
    """What a bench handshake configuration stores (bench/iotst.py, bench/device.py) as one
    CI measure: the statistic of its network-invariant cost, named (under Bencher's 64
    characters) and scaled from the stored unit."""

    statistic: str
    measure: str
    unit: str
    scale: float


TRACED = HandshakeMeasure(
    "network_invariant_cpu_s", "handshake CPU time, network-invariant, measured", "ms", 1e3
)
COUNTED = HandshakeMeasure(
    "network_invariant", "handshake instructions, network-invariant, counted", "instructions", 1.0
)


# The level of the intervals bench handshake stored before it stored their level with them:
# its one level then and since (bench.handshake.CONFIDENCE, never changed).
STORED_BEFORE_LEVEL = 0.95


def handshake_costs(data: ReportData) -> list[Cost]:
    """Each traced or counted ``bench handshake`` configuration's network-invariant cost, with
    the interval its repetitions (or seeds) gave (Student-t: bench.handshake.Statistic)."""
    found = []
    for configuration, details in traced_configurations(data, counted_too=True):
        if counted(details):
            chosen = COUNTED
            stat = details.get("instructions", {}).get(chosen.statistic)
            over = f"{details.get('repetitions', '?')} seeds ({details['method']})"
        else:
            chosen = TRACED
            stat = details.get(chosen.statistic)
            over = "repetitions (traced on this host)"
        if not stat or not math.isfinite(stat.get("mean", math.nan)):
            continue
        low, high = (_finite(stat[end] * chosen.scale) for end in ("ci_low", "ci_high"))
        value = stat["mean"] * chosen.scale
        found.append(
            Cost(
                configuration=configuration,
                baseline=None,
                measure=chosen.measure,
                unit=chosen.unit,
                value=value,
                low=low,
                high=high,
                level=float(stat.get("level", STORED_BEFORE_LEVEL)),
                method=f"Student-t over {over}",
                runs=int(stat.get("n", 0)),
                lower_is_better=True,
                sentence=f"{configuration}: {value:.6g} {chosen.unit} per handshake",
            )
        )
    return found
