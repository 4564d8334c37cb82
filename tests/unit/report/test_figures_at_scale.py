"""Figures of large experiments (synthetic data whose answer is known): the latency figure
draws a large sample thinned, and says so, its boxes and steps those of every message; current
over time stays a page tall for many configurations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iotsecbench.report import figures
from iotsecbench.report.data import ReportData
from iotsecbench.report.figures import DRAWN_POINTS, latency_distribution, rank_thinned
from iotsecbench.report.style import Palette


def test_rank_thinning_keeps_the_extremes_and_spaces_ranks_evenly() -> None:
    ordered = np.arange(10_001, dtype=float)
    kept = rank_thinned(ordered, at_most=101)
    assert kept[0] == 0 and kept[-1] == 10_000 and len(kept) == 101
    assert set(np.diff(kept)) == {100}  # every 100th rank: 0, 100, …, 10 000
    assert list(rank_thinned(ordered[:7], at_most=101)) == list(range(7))  # small: whole


def _data(per_configuration: int) -> ReportData:
    rng = np.random.default_rng(7)
    rows = [
        {"configuration": name, "run": 1, "seq": i, "latency_ms": value}
        for name, scale in (("plain", 1.0), ("tls1.2", 2.0))
        for i, value in enumerate(rng.lognormal(np.log(scale), 0.8, per_configuration))
    ]
    return ReportData(
        source=Path("."), latency=pd.DataFrame(rows), configurations=["plain", "tls1.2"]
    )


@pytest.mark.slow  # over half a second of CPU (tests/lanes.py): it draws the figure
@pytest.mark.parametrize("messages", [200, 20_000])
def test_the_latency_figure_draws_every_statistic_of_every_message(
    messages: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: dict[str, object] = {}
    finish = figures._finish

    def spy(key, title, caption, provenance, figure):  # what the figure holds before saving
        left, right = figure.axes
        drawn["medians"] = [line.get_ydata()[0] for line in left.lines[4::6]]
        drawn["steps"] = [line.get_xydata() for line in right.get_lines()]
        return finish(key, title, caption, provenance, figure)

    monkeypatch.setattr(figures, "_finish", spy)
    data = _data(messages)
    figure = latency_distribution(data, Palette(data.configurations))
    assert figure is not None
    for name, median, steps in zip(
        ("plain", "tls1.2"), drawn["medians"], drawn["steps"], strict=True
    ):
        sample = np.sort(data.latency.loc[data.latency.configuration == name, "latency_ms"])
        assert median == pytest.approx(np.median(sample))  # of every message, thinned or not
        assert len(steps) <= DRAWN_POINTS
        assert steps[0][0] == sample[0] and steps[-1][0] == sample[-1]
        assert steps[-1][1] == 1.0
        # every step drawn lies on the sample's own ECDF
        ranks = np.searchsorted(sample, steps[:, 0], side="right")
        assert np.allclose(steps[:, 1], ranks / len(sample))
    assert ("Drawn at most" in figure.caption) == (messages > DRAWN_POINTS)


def _current(configurations: int) -> ReportData:
    """Each configuration's current a constant known by its index, two runs, two devices."""
    names = [f"config-{i:02d}" for i in range(configurations)]
    rows = [
        {"configuration": name, "device": device, "run": run, "time_s": float(t),
         "current_ma": 10.0 + i + (5.0 if device == "receiver" else 0.0)}
        for i, name in enumerate(names)
        for device in ("emitter", "receiver")
        for run in (1, 2)
        for t in range(20)
    ]  # fmt: skip
    return ReportData(source=Path("."), current=pd.DataFrame(rows), configurations=names)


@pytest.mark.slow  # over half a second of CPU (tests/lanes.py): it draws the figure
@pytest.mark.parametrize("configurations", [3, 13])
def test_current_over_time_is_rows_of_lines_or_one_heat_map_per_device(
    configurations: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to a dozen configurations a row of line panels each; beyond, one heat map per
    device, a row per configuration holding its runs' mean (here the known constant), so the
    figure stays a page tall."""
    drawn: dict[str, object] = {}
    finish = figures._finish

    def spy(key, title, caption, provenance, figure):
        drawn["height"] = figure.get_size_inches()[1]
        drawn["images"] = [image.get_array() for axis in figure.axes for image in axis.images]
        return finish(key, title, caption, provenance, figure)

    monkeypatch.setattr(figures, "_finish", spy)
    data = _current(configurations)
    figure = figures.current_over_time(data, Palette(data.configurations))
    assert figure is not None and figure.key == "current-over-time"
    if configurations <= figures.SMALL_MULTIPLES_AT_MOST:
        assert drawn["images"] == [] and "Each line is one run" in figure.caption
        return
    emitter, receiver = drawn["images"]
    assert emitter.shape == (13, 20) and receiver.shape == (13, 20)
    assert np.allclose(emitter[:, 0], 10.0 + np.arange(13))  # row i: configuration i
    assert np.allclose(receiver, emitter + 5.0)
    assert drawn["height"] < 5 and "13 configurations, a row each" in figure.caption


@pytest.mark.slow  # over half a second of CPU (tests/lanes.py): it draws the figures
def test_many_configurations_get_one_row_each_in_the_overhead_and_latency_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """14 configurations: the relative overhead is a heat map per device whose row i holds
    configuration i's known overhead over the baseline (config-00 draws 10 mA on the emitter,
    config-i 10 + i: 10 i % at every second), 13 rows, the baseline not one of them; the
    latency figure of 13 configurations one box per row and no ECDF."""
    drawn: dict[str, object] = {}
    finish = figures._finish

    def spy(key, title, caption, provenance, figure):
        drawn[key] = [image.get_array() for axis in figure.axes for image in axis.images]
        drawn[f"{key}-axes"] = [a for a in figure.axes if a.get_label() != "<colorbar>"]
        return finish(key, title, caption, provenance, figure)

    monkeypatch.setattr(figures, "_finish", spy)
    data = _current(14)
    overhead = figures.relative_overhead(data, Palette(data.configurations))
    assert overhead is not None and "13 configurations, a row each" in overhead.caption
    emitter, receiver = drawn["relative-overhead"]
    assert emitter.shape == (13, 20)
    assert np.allclose(emitter, 10.0 * np.arange(1, 14)[:, None])
    assert np.allclose(receiver, 100.0 * np.arange(1, 14)[:, None] / 15.0)
    latency = _data(200)
    names = [f"config-{i:02d}" for i in range(13)]
    latency.latency = pd.concat(
        [latency.latency.assign(configuration=name) for name in names], ignore_index=True
    )
    latency.configurations = names
    figure = figures.latency_distribution(latency, Palette(names))
    assert figure is not None and "13 configurations, a row each" in figure.caption
    (axis,) = drawn["latency-axes"]  # the boxes alone
    assert [t.get_text() for t in axis.get_yticklabels()] == names
