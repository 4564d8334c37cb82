"""A planted step is found within ±2 s; stationary AR(1) noise rarely yields change points."""

import sys
from pathlib import Path

import numpy as np

from iotsecbench.analysis.changepoint import detect_change_points

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data" / "analysis"))
from generate import ar1


def test_planted_step_found_within_two_seconds():
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(50):
        x = ar1(600, 0.6, 1.0, rng)
        k = int(rng.integers(60, 540))
        x[k:] += 4.0
        result = detect_change_points(x)
        hits += any(abs(c - k) <= 2 for c in result.change_points)
    assert hits >= 47, hits


def test_handshake_transient_is_split_off():
    rng = np.random.default_rng(8)
    x = ar1(600, 0.7, 2.0, rng) + 100.0
    x[:8] += 40.0
    result = detect_change_points(x)
    assert abs(result.transient_end - 8) <= 2


def test_long_series_are_searched_coarsely_and_refined():
    rng = np.random.default_rng(9)
    x = ar1(6000, 0.5, 1.0, rng)
    x[3210:] += 3.0
    result = detect_change_points(x)
    assert any(abs(c - 3210) <= 2 for c in result.change_points)


def test_few_false_change_points_on_stationary_noise():
    rng = np.random.default_rng(10)
    false = sum(
        bool(detect_change_points(ar1(600, 0.8, 1.0, rng)).change_points) for _ in range(100)
    )
    assert false <= 3
