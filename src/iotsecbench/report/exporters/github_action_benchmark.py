"""github-action-benchmark's custom JSON of an experiment's costs (``export DIR --format
github-action-benchmark``), for benchmark-action/github-action-benchmark with ``tool:
'customSmallerIsBetter'`` (docs/exports.md).

The action reads a list of ``{name, unit, value, range?, extra?}`` (its ``BenchmarkResult``,
src/extract.ts) and takes one direction per file: costs where lower is better go to
``github-action-benchmark.json`` (customSmallerIsBetter), any where higher is better to
``github-action-benchmark-bigger-is-better.json`` (customBiggerIsBetter).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iotsecbench.report.exporters.costs import Cost, costs

FORMAT = "github-action-benchmark"
FILE_NAME = "github-action-benchmark.json"
BIGGER_FILE_NAME = "github-action-benchmark-bigger-is-better.json"


def entry(cost: Cost) -> dict[str, Any]:
    result: dict[str, Any] = {
        "name": f"{cost.configuration}: {cost.measure}"
        + (f" over {cost.baseline}" if cost.baseline is not None else ""),
        "unit": cost.unit,
        "value": cost.value,
        "extra": f"{cost.sentence}\n{cost.runs} runs; interval: {cost.method}",
    }
    if cost.low is not None and cost.high is not None:
        result["range"] = f"{cost.level * 100:g} % CI {cost.low:.6g} to {cost.high:.6g}"
    return result


def render(found: list[Cost]) -> dict[str, list[dict[str, Any]]]:
    """File name → the entries of one direction (a direction without entries: no file)."""
    files = {
        FILE_NAME: [entry(c) for c in found if c.lower_is_better],
        BIGGER_FILE_NAME: [entry(c) for c in found if not c.lower_is_better],
    }
    return {name: entries for name, entries in files.items() if entries}


def documents(results_dir: Path, run_id: str | None = None) -> dict[str, Any]:
    return render(costs(results_dir))
