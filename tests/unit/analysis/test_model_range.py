"""The model's range of modelled comparisons and values (analysis.model_range), from draws
whose answer is known: a's and b's shifts per draw, pooled by run length."""

from __future__ import annotations

import numpy as np
import pytest

from iotsecbench.analysis.model_range import (
    ModelDraws,
    model_interval,
    model_stage,
    pooled_shift,
    share_above,
)
from iotsecbench.analysis.results import Comparison, Interval

DRAWS = 400


def _comparison(metric: str, difference: float) -> Comparison:
    return Comparison(metric, "emitter", "a", "b", 1.0 + difference, 1.0, difference,
                      Interval(difference - 0.1, difference + 0.1, 0.95, "moving"), True, 0.5,
                      "medium", "moving", 20, 500, 10, 10)  # fmt: skip


def test_pooled_shift_weights_each_run_by_its_values() -> None:
    shifts = [np.array([1.0, 2.0]), np.array([4.0, 8.0])]
    assert np.allclose(pooled_shift(shifts, [1, 3]), [(1 + 12) / 4, (2 + 24) / 4])


def test_a_comparison_moves_by_a_shift_less_b_shift_on_every_draw() -> None:
    rng = np.random.default_rng(5)
    common = rng.normal(0.0, 1.0, DRAWS)  # what both configurations share (a current price)
    own = rng.normal(0.3, 0.1, DRAWS)  # what a alone adds on a draw (its extra airtime)
    shifts = {
        ("a", "emitter", 1): common + own,
        ("a", "emitter", 2): common + own,
        ("b", "emitter", 1): common,
    }
    model = ModelDraws(shifts, {}, DRAWS, "test draws", 0.9)
    current = {
        ("a", "emitter"): {1: np.ones(10), 2: np.ones(30)},
        ("b", "emitter"): {1: np.ones(20)},
    }
    charges = {("a", "emitter"): {1: 2.0, 2: 4.0}, ("b", "emitter"): {1: 3.0}}
    durations = {("a", "emitter"): {1: 3600.0, 2: 7200.0}, ("b", "emitter"): {1: 3600.0}}
    stage = model_stage([_comparison("current", 0.2), _comparison("charge", 0.0)], current,
                        charges, durations, model, "current", "charge")  # fmt: skip
    current_c, charge_c = stage.comparisons
    expected = 0.2 + own  # the common part cancels draw by draw
    assert (current_c.model_range.low, current_c.model_range.high) == pytest.approx(
        tuple(np.percentile(expected, [5, 95]))
    )
    assert current_c.model_share == pytest.approx(np.mean(expected > 0))
    # charge: each run's shift × its hours, mean over runs, a less b
    charge_expected = 0.0 + ((common + own) * 1 + (common + own) * 2) / 2 - common * 1
    assert charge_c.model_range.low == pytest.approx(np.percentile(charge_expected, 5))
    values = {(v.configuration, v.metric): v for v in stage.values}
    assert values[("b", "current")].model_range.high == pytest.approx(
        np.percentile(1.0 + common, 95)
    )
    assert values[("a", "charge")].value == 3.0


def test_a_configuration_the_draws_do_not_cover_gets_no_range() -> None:
    model = ModelDraws({("a", "emitter", 1): np.zeros(DRAWS)}, {}, DRAWS, "test draws", 0.9)
    current = {("a", "emitter"): {1: np.ones(5)}, ("b", "emitter"): {1: np.ones(5)}}
    stage = model_stage([_comparison("current", 0.0)], current, {}, {}, model, "current", "charge")
    assert stage.comparisons[0].model_range is None
    assert [v.configuration for v in stage.values] == ["a"]


def test_interval_and_share_ends() -> None:
    draws = np.arange(101, dtype=float)
    interval = model_interval(draws, "m", 0.9)
    assert (interval.low, interval.high, interval.level) == pytest.approx((5.0, 95.0, 0.9))
    assert share_above(np.array([-1.0, 0.0, 2.0, 3.0])) == 0.625  # a tie counts half
    assert share_above(np.zeros(10)) == 0.5
    assert np.isnan(share_above(np.array([])))


def test_the_active_current_moves_by_the_runs_shifts_weighted_by_their_length() -> None:
    """What the battery projection reads: total charge / total time on every draw."""
    rng = np.random.default_rng(2)
    s1, s2 = rng.normal(0, 1, DRAWS), rng.normal(0, 1, DRAWS)
    model = ModelDraws({("a", "emitter", 1): s1, ("a", "emitter", 2): s2}, {}, DRAWS, "m", 0.9)
    charges = {("a", "emitter"): {1: 10.0, 2: 40.0}}  # mAh over 1 h and 3 h
    durations = {("a", "emitter"): {1: 3600.0, 2: 3 * 3600.0}}
    stage = model_stage([], {}, charges, durations, model, "current", "charge")
    drawn = stage.active_current
    assert drawn.values[("a", "emitter")] == pytest.approx((50.0 + s1 + 3 * s2) / 4)
    assert (drawn.method, drawn.level) == ("m", 0.9)
