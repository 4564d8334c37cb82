"""The model's uncertainty (energy.uncertainty, energy.exposure) against analytic cases: a
linear model of normal parameters, the PERT distribution's own quantiles and moments, common
random numbers, and seeds."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from iotsecbench.energy.exposure import Exposure
from iotsecbench.energy.profile import load_profile
from iotsecbench.energy.uncertainty import (
    PERT_SHAPE,
    central_range,
    draw_profile,
    keyed_generator,
    pert,
    point_values,
)

PROFILE = load_profile("esp32-wroom-32")
# One minute of a run: 30 kB out, 10 kB in, 1 s of logged ECDH work — below every clip of the
# model (CPU share and airtime < 1), where the mean current is linear in the four currents.
EXPOSURE = Exposure(60.0, 30_000, 10_000, 40, 30, {"ecdh-p256-keygen": (10, 10)})


def test_a_linear_model_of_normal_parameters_gives_the_analytic_90_percent_range() -> None:
    """I = I_idle + I_core·c + (I_tx − I_idle)·a_tx + (I_rx − I_idle)·a_rx with the shares
    fixed: a normal I per current gives a normal I whose 90 % range is μ ± 1.645 σ."""
    draws = 20_000
    point = dict(point_values(PROFILE))
    spread = {"idle_associated_current": 2.0, "core_extra_current": 3.0, "tx_current": 9.0,
              "rx_current": 4.0}  # fmt: skip
    values: dict[str, object] = dict(point)
    for name, sigma in spread.items():
        values[name] = keyed_generator(7, name).normal(point[name], sigma, draws)
    drawn = np.asarray(EXPOSURE.mean_current_ma(PROFILE, values))
    # The shares the currents are weighted with, at the point (the model's own arithmetic).
    cpu_share = float(EXPOSURE.busy_seconds(PROFILE, point)) / EXPOSURE.duration_s
    overhead = point["packet_overhead"] * 1e-3
    tx = (EXPOSURE.tx_bytes * 8 / (point["tx_goodput"] * 1e6) + 40 * overhead) / 60.0
    rx = (EXPOSURE.rx_bytes * 8 / (point["rx_goodput"] * 1e6) + 30 * overhead) / 60.0
    assert 0 < cpu_share < 1 and 0 < tx + rx < 1
    weights = {"idle_associated_current": 1 - tx - rx, "core_extra_current": cpu_share,
               "tx_current": tx, "rx_current": rx}  # fmt: skip
    mean = float(EXPOSURE.mean_current_ma(PROFILE, point))
    sigma = float(np.sqrt(sum((weights[n] * spread[n]) ** 2 for n in spread)))
    analytic = (mean - 1.6448536 * sigma, mean + 1.6448536 * sigma)
    low, high = central_range(drawn)
    width = analytic[1] - analytic[0]
    assert abs(low - analytic[0]) < 0.02 * width
    assert abs(high - analytic[1]) < 0.02 * width
    assert abs((high - low) - width) < 0.02 * width


def test_pert_draws_have_the_beta_quantiles_and_moments() -> None:
    """PERT(a, m, b) is a + (b − a)·Beta(1 + λ(m − a)/(b − a), 1 + λ(b − m)/(b − a)): its
    5 % and 95 % points are the beta's, its mean (a + λm + b)/(λ + 2)."""
    low, mode, high = 2.0, 3.0, 8.0
    draws = pert(keyed_generator(1, "x"), low, mode, high, 40_000)
    alpha = 1 + PERT_SHAPE * (mode - low) / (high - low)
    beta = 1 + PERT_SHAPE * (high - mode) / (high - low)
    expected = low + (high - low) * stats.beta.ppf([0.05, 0.95], alpha, beta)
    assert np.allclose(central_range(draws), expected, rtol=0.01)
    assert draws.mean() == pytest.approx((low + PERT_SHAPE * mode + high) / 6, rel=0.005)
    assert low <= draws.min() and draws.max() <= high
    assert np.all(pert(keyed_generator(1, "x"), 5.0, 5.0, 5.0, 3) == 5.0)
    with pytest.raises(ValueError, match="low <= mode <= high"):
        pert(keyed_generator(1, "x"), 2.0, 9.0, 8.0, 3)


def test_a_difference_keeps_its_correlation_on_common_draws() -> None:
    """Two configurations on the same draws: the difference's range is far narrower than
    the naive difference of their ranges, and narrower than on independent draws."""
    more = dataclasses.replace(EXPOSURE, tx_bytes=36_000, tx_segments=48)
    common = draw_profile(PROFILE, 2000, seed=3)
    a = np.asarray(more.mean_current_ma(PROFILE, common.values))
    b = np.asarray(EXPOSURE.mean_current_ma(PROFILE, common.values))
    difference = central_range(a - b)
    range_a, range_b = central_range(a), central_range(b)
    naive = (range_a[0] - range_b[1], range_a[1] - range_b[0])
    assert difference[1] - difference[0] < 0.2 * (naive[1] - naive[0])
    assert difference[0] > 0  # more bytes sent: more current on every draw
    other = draw_profile(PROFILE, 2000, seed=4)
    independent = central_range(a - np.asarray(EXPOSURE.mean_current_ma(PROFILE, other.values)))
    assert difference[1] - difference[0] < 0.2 * (independent[1] - independent[0])


def test_a_fixed_seed_gives_the_same_draws_and_a_new_number_leaves_the_others_alone() -> None:
    first, again = draw_profile(PROFILE, 500, seed=11), draw_profile(PROFILE, 500, seed=11)
    assert all(np.array_equal(first[n], again[n]) for n in first.values)
    other = draw_profile(PROFILE, 500, seed=12)
    assert not np.array_equal(first["tx_current"], other["tx_current"])
    # keyed by name: the draws of one number do not depend on which others exist
    alone = pert(keyed_generator(11, "tx_current"), *PROFILE.parameters["tx_current"].bounds[:1],
                 PROFILE.parameters["tx_current"].value,
                 PROFILE.parameters["tx_current"].bounds[1], 500)  # fmt: skip
    assert np.array_equal(alone, first["tx_current"])
    with pytest.raises(ValueError, match="at least 2"):
        draw_profile(PROFILE, 1)


def test_every_draw_stays_in_its_range_and_counted_numbers_move_with_the_cpi() -> None:
    profile = load_profile("esp32-c3")
    drawn = draw_profile(profile, 1000, seed=0)
    numbers = profile.numbers()
    for name, number in numbers.items():
        low, high = number.bounds
        assert low - 1e-12 <= drawn[name].min() and drawn[name].max() <= high + 1e-12, name
    counted = [n for n, p in numbers.items() if p.status == "counted" and p.value > 0]
    assert counted
    cpi = drawn["cpi"] / numbers["cpi"].value
    for name in counted:
        assert np.allclose(drawn[name] / numbers[name].value, cpi), name


def test_a_run_s_summed_activity_gives_the_per_window_model_s_mean_current() -> None:
    """Exposure (what the draws recompute) against the energy model it stands for: with no
    window clipped (airtime and CPU well under each window), the run's time-weighted mean of
    model_current's windows is Exposure.mean_current_ma at the profile's values."""
    from iotsecbench.energy.model import Operation, model_current

    t_ns = np.arange(1, 61) * 1_000_000_000  # 60 one-second windows
    sent = np.cumsum(np.full(60, 600))
    received = np.cumsum(np.full(60, 200))
    segments = np.cumsum(np.full(60, 2))
    operations = [Operation(int(t) - 500_000_000, "aes-gcm", 256) for t in t_ns[::2]]
    operations += [Operation(int(t_ns[10]) - 900_000_000, "ecdh-p256-keygen", 1)]
    modelled = model_current(PROFILE, t_ns, sent, received, segments, segments, operations)
    per_window = float(np.average(modelled.current_ma, weights=modelled.window_s))
    totals: dict[str, tuple[int, int]] = {}
    for op in operations:
        calls, amount = totals.get(op.primitive, (0, 0))
        totals[op.primitive] = (calls + 1, amount + op.amount)
    exposure = Exposure.from_samples(t_ns, sent, received, segments, segments, totals)
    assert float(exposure.mean_current_ma(PROFILE, point_values(PROFILE))) == pytest.approx(
        per_window, rel=1e-6
    )


def test_a_counted_run_s_cpu_time_moves_with_the_cpi_alone() -> None:
    """A device emitter (run --target): the counted model (energy.model.counted_current)
    gives each window's CPU share from its instructions; the summed exposure reproduces its
    mean at the profile's values, and on a draw the busy time is the count × that draw's CPI
    / clock — the priced operations (logged beside the count) play no part."""
    from iotsecbench.energy.model import counted_current

    profile = load_profile("esp32-c3")
    cpi = profile.value("cpi")
    t_ns = np.arange(1, 61) * 1_000_000_000
    instructions = np.cumsum(np.full(60, 4_000_000))  # ~5 % of a 160 MHz core per second
    sent = np.cumsum(np.full(60, 600))
    segments = np.cumsum(np.full(60, 2))
    modelled = counted_current(profile, t_ns, instructions, sent, sent, segments, segments,
                               cpi=cpi)  # fmt: skip
    per_window = float(np.average(modelled.current_ma, weights=modelled.window_s))
    priced = {"ecdh-p256-keygen": (1000, 1000)}  # would be seconds of CPU if priced
    exposure = Exposure.from_samples(t_ns, sent, sent, segments, segments, priced,
                                     modelled.cpu_fraction)  # fmt: skip
    point = dict(point_values(profile))
    assert exposure.busy_seconds(profile, point) == pytest.approx(
        60 * 4_000_000 * cpi / profile.cpu_clock_hz
    )
    assert float(exposure.mean_current_ma(profile, point)) == pytest.approx(per_window, rel=1e-6)
    draws = draw_profile(profile, 500, seed=3)
    busy = np.asarray(exposure.busy_seconds(profile, draws.values))
    assert busy == pytest.approx(exposure.busy_seconds(profile, point) * draws["cpi"] / cpi)
