"""Benchmark (not a test): what drawing a report's figures costs, and what keeping each
figure's layout from its PNG's draw saves.

Draws every figure of two inputs — the golden experiment (tests/data/golden: 3
configurations, 2 runs) and, when given, a results directory of your own (a block-sizes
run's ~10^5 messages is the heavy case) — alternately in two ways, ``--rounds`` times each,
in one process: as the report does (the layout the PNG's draw computed kept for the SVG,
``report/figures.py: _finish``) and with the layout computed again for the SVG (matplotlib's
default). Prints the median CPU seconds of each way, their ratio, and each figure's share.

    .venv/bin/python benchmarks/bench_report.py [--results DIR] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from matplotlib.figure import Figure
from tests.conftest import golden_copy

from iotsecbench.report import figures, figures_analysis, figures_blocks
from iotsecbench.report.data import load
from iotsecbench.report.style import Palette

BUILDERS = (*figures.BUILDERS, *figures_analysis.BUILDERS, *figures_blocks.BUILDERS)
KEEP_LAYOUT = Figure.set_layout_engine


def _recompute_layout(figure: Figure, layout=None, **kwargs):  # type: ignore[no-untyped-def]
    """``set_layout_engine`` that ignores the report's 'none' (the layout stays on)."""
    if layout == "none":
        return None
    return KEEP_LAYOUT(figure, layout, **kwargs)


def _draw_all(data, per_figure: dict[str, list[float]]) -> float:  # type: ignore[no-untyped-def]
    palette = Palette(data.configurations)
    total = 0.0
    for builder in BUILDERS:
        start = time.process_time()
        builder(data, palette)
        spent = time.process_time() - start
        per_figure[builder.__name__].append(spent)
        total += spent
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, help="a results directory of your own")
    parser.add_argument("--rounds", type=int, default=5)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        inputs = {"golden": golden_copy(Path(work))}
        if arguments.results is not None:
            inputs[arguments.results.name] = arguments.results
        for name, directory in inputs.items():
            data = load(directory)
            _draw_all(data, defaultdict(list))  # fonts and caches warm
            kept: list[float] = []
            again: list[float] = []
            per_figure: dict[str, list[float]] = defaultdict(list)
            for _ in range(arguments.rounds):
                kept.append(_draw_all(data, per_figure))
                with mock.patch.object(Figure, "set_layout_engine", _recompute_layout):
                    again.append(_draw_all(data, defaultdict(list)))
            k, a = statistics.median(kept), statistics.median(again)
            print(f"{name}: layout kept {k:.2f} s, computed again {a:.2f} s, ratio {k / a:.2f}")
            for figure, spent in sorted(per_figure.items(), key=lambda item: -sum(item[1])):
                if sum(spent):
                    print(f"  {figure:28} {statistics.median(spent):6.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
