"""Bencher Metric Format (BMF) JSON of an experiment's costs (``export DIR --format bencher``),
for `bencher run --adapter json --file bencher.json` (https://bencher.dev, docs/exports.md).

One Benchmark per configuration and baseline ("tls1.2 over plain"; a bench handshake
configuration alone), one Measure per metric and role ("emitter modelled current (mA)", under
Bencher's 64 characters): ``value`` the configuration's cost over the baseline (a bench
handshake's: its own), ``lower_value`` and ``upper_value`` the ends of the analysis' interval
(left out where it has none). The schema is Bencher's own, vendored in
tests/data/schemas/bmf.json with its source.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iotsecbench.report.exporters.costs import Cost, costs

FORMAT = "bencher"
FILE_NAME = "bencher.json"


def render(found: list[Cost]) -> dict[str, dict[str, dict[str, float]]]:
    document: dict[str, dict[str, dict[str, float]]] = {}
    for cost in found:
        metric = {"value": cost.value}
        if cost.low is not None and cost.high is not None:
            metric.update(lower_value=cost.low, upper_value=cost.high)
        benchmark = cost.configuration
        if cost.baseline is not None:
            benchmark += f" over {cost.baseline}"
        document.setdefault(benchmark, {})[cost.measure] = metric
    return document


def documents(results_dir: Path, run_id: str | None = None) -> dict[str, Any]:
    """File name → JSON document."""
    return {FILE_NAME: render(costs(results_dir))}
