"""A handshake's device time (energy.handshake) against its formula, worked by hand, and
the table predict handshake and the iotst preset print."""

from __future__ import annotations

import pytest

from iotsecbench.energy.handshake import handshake_table, handshake_time
from iotsecbench.energy.profile import load_profile
from iotsecbench.energy.uncertainty import point_values

PROFILE = load_profile("esp32-wroom-32")  # 240 MHz


def test_the_handshake_time_follows_its_formula() -> None:
    """t(f, n) = (Σ price·(s·f_ref/f + 1 − s) + overhead·f_ref/f)·(1 + k·(n − 1)): one RSA
    verify of 2 ms with half of it on a fixed clock, 3 ms overhead, k = 0.1, at 80 MHz and
    2 cores: (2·(0.5·3 + 0.5) + 3·3)·1.1 = 14.3 ms."""
    values = dict(point_values(PROFILE))
    values.update({"rsa2048-public.per_operation": 2.0, "rsa2048-public.clock_scaled_share": 0.5,
                   "handshake_overhead": 3.0, "extra_core_slowdown": 0.1})  # fmt: skip
    operations = [("rsa2048-public", 1), ("no-such-primitive", 5)]
    time = handshake_time(PROFILE, values, operations, 80, 2)
    assert time.seconds == pytest.approx(14.3e-3)
    assert time.clock_scaled_s == pytest.approx((2 * 0.5 * 3 + 3 * 3) * 1e-3)
    assert time.fixed_s == pytest.approx(1e-3)
    at_reference = handshake_time(PROFILE, values, operations, 240, 1)
    assert at_reference.seconds == pytest.approx(5e-3)  # the price itself, plus the overhead


def test_the_table_has_every_clock_and_core_count_with_a_range_around_the_figure() -> None:
    operations = [("x25519-keygen", 1), ("x25519-derive", 1), ("rsa2048-public", 2)]
    table = handshake_table(PROFILE, operations, [80, 160, 240], [1, 2], draws=500, seed=2)
    assert set(table) == {f"{m}MHz x{c}" for m in (80, 160, 240) for c in (1, 2)}
    for entry in table.values():
        model = entry["model_range"]
        assert model["level"] == 0.9 and "500 draws of esp32-wroom-32" in model["method"]
        assert 0 < model["low"] < entry["seconds"] < model["high"]
    # slower clock, longer handshake, on the point and on the range's ends
    assert table["80MHz x1"]["seconds"] > table["240MHz x1"]["seconds"]
    assert table["80MHz x1"]["model_range"]["low"] > table["240MHz x1"]["model_range"]["low"]
    assert handshake_table(PROFILE, operations, [80], [1], 500, 2) == {
        "80MHz x1": table["80MHz x1"]
    }  # fixed seed: the same range
