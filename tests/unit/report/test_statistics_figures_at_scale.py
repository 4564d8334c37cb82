"""The statistics' figures of a large experiment (synthetic records whose answer is known):
past a dozen configurations the headline forest becomes one heat map, the effect sizes a row
per configuration against the baseline, the bootstrap figure the closest calls — each a page
tall, each cell the number it stands for."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from iotsecbench.analysis.document import AnalysisDocument
from iotsecbench.analysis.results import Comparison, Interval
from iotsecbench.report import figures, figures_analysis, figures_headline
from iotsecbench.report.data import ReportData
from iotsecbench.report.findings import Finding, Findings
from iotsecbench.report.style import Palette

pytestmark = pytest.mark.slow  # over half a second of CPU (tests/lanes.py): they draw figures

BASELINE = "plain"
NAMES = [f"config-{i:02d}" for i in range(1, 15)]  # 14 against the baseline


def _spy(monkeypatch: pytest.MonkeyPatch, module) -> dict:
    drawn: dict = {}
    finish = module._finish

    def spy(key, title, caption, provenance, figure):
        drawn["height"] = figure.get_size_inches()[1]
        axes = [a for a in figure.axes if a.get_label() != "<colorbar>"]
        drawn["axes"] = axes
        drawn["texts"] = [t.get_text() for a in axes for t in a.texts]
        drawn["titles"] = [a.get_title() for a in axes if a.get_visible()]
        return finish(key, title, caption, provenance, figure)

    monkeypatch.setattr(module, "_finish", spy)
    return drawn


def _finding(index: int, metric: str, role: str) -> Finding:
    """config-i is i % above the baseline of 10; its interval holds zero for odd i."""
    difference = 0.1 * index
    half = 0.05 if index % 2 == 0 else 2.0
    return Finding(
        configuration=f"config-{index:02d}", baseline=BASELINE, metric=metric, role=role,
        kind="modelled", unit="mA", value=10 + difference, baseline_value=10.0,
        difference=difference,
        interval=Interval(difference - half, difference + half, 0.95, "block bootstrap"),
        runs=5, runs_needed=None, enough_runs=True,
    )  # fmt: skip


def test_the_headline_of_many_configurations_is_one_heat_map_of_the_findings(monkeypatch):
    drawn = _spy(monkeypatch, figures_headline)
    items = [
        _finding(i, metric, role)
        for i in range(1, 15)
        for metric, role in (("current_ma", "emitter"), ("current_ma", "receiver"))
    ]
    figure = figures_headline.headline(Findings(BASELINE, items), Palette([BASELINE, *NAMES]))
    assert figure is not None and "14 configurations, a row each" in figure.caption
    (axis,) = drawn["axes"]
    assert [t.get_text() for t in axis.get_yticklabels()] == NAMES
    # Row i, both columns: config-i's i %, one decimal below 9.5 %, none above.
    expected = [f"{i:+.1f}" if i < 9.5 else f"{i:+.0f}" for i in range(1, 15) for _ in (0, 1)]
    assert drawn["texts"] == expected
    colours = axis.images[0].get_array()
    alphas = colours[:, :, 3]
    assert np.allclose(alphas[1::2], 1.0) and np.allclose(alphas[0::2], 0.3)  # odd i: pale
    assert drawn["height"] < 5


def _comparison(a: str, b: str, d: float, low: float, high: float) -> Comparison:
    return Comparison(
        metric="current_ma", device="emitter", a=a, b=b, mean_a=1.0, mean_b=1.0,
        difference=(low + high) / 2, interval=Interval(low, high, 0.95, "moving"),
        significant=low > 0 or high < 0, cohens_d=d, effect="", method="moving",
        block_length=5, reps=2000, n_a=100, n_b=100,
        replicate_histogram={"edges": [low, (low + high) / 2, high], "counts": [10, 10]},
    )  # fmt: skip


def _analysis(comparisons: list[Comparison]) -> ReportData:
    document = AnalysisDocument(
        options={}, configurations=[BASELINE, *NAMES], baseline=BASELINE, cv=[],
        comparisons=comparisons, series=[], hypotheses=[], warnings=[], pareto=None,
        sensitivity=[], notes=[],
    )  # fmt: skip
    return ReportData(source=Path("."), analysis=document, configurations=[BASELINE, *NAMES])


def test_effect_sizes_of_many_configurations_are_a_row_each_against_the_baseline(monkeypatch):
    """Every pair of 15 configurations is 105 columns; the figure keeps the 14 against the
    baseline, d of configuration − baseline whichever way the pair was written."""
    drawn = _spy(monkeypatch, figures_analysis)
    pairs = [(a, b) for i, a in enumerate([BASELINE, *NAMES]) for b in [BASELINE, *NAMES][i + 1 :]]
    comparisons = [
        _comparison(a, b, 0.1 * NAMES.index(b if a == BASELINE else a), 0.0, 1.0) for a, b in pairs
    ]  # written plain − config-i: d must be flipped
    data = _analysis(comparisons)
    figure = figures_analysis.cohens_d_heatmap(data, Palette(data.configurations))
    assert figure is not None and "14 configurations, a row each" in figure.caption
    (axis,) = drawn["axes"]
    assert [t.get_text() for t in axis.get_yticklabels()] == NAMES
    assert drawn["texts"] == [f"{-0.1 * i:+.2f}" for i in range(14)]
    assert drawn["height"] < 5


def test_the_bootstrap_figure_of_many_comparisons_shows_the_closest_calls(monkeypatch):
    """14 comparisons with the baseline, config-i's interval centred i half-widths from zero
    but for four that hold zero: those four and the next eight closest are drawn, in order."""
    drawn = _spy(monkeypatch, figures_analysis)
    distances = [5, 0.2, 9, 0.5, 13, 3, 0.1, 8, 11, 0.9, 2, 7, 6, 4]
    comparisons = [
        _comparison(n, BASELINE, 0.0, d - 1, d + 1) for n, d in zip(NAMES, distances, strict=True)
    ]
    data = _analysis(comparisons)
    figure = figures_analysis.bootstrap_distributions(data, Palette(data.configurations))
    assert figure is not None and "The 12 of 14 comparisons" in figure.caption
    kept = [n for n, d in zip(NAMES, distances, strict=True) if d not in (13, 11)]
    assert [title.split("\n")[0] for title in drawn["titles"]] == kept


def test_compact_forms_start_past_a_dozen():
    assert not figures.too_many(figures.SMALL_MULTIPLES_AT_MOST)
    assert figures.too_many(figures.SMALL_MULTIPLES_AT_MOST + 1)
