"""The activity → current model on hand-computed cases (default ESP32-WROOM-32 profile).

Profile numbers used below: I_idle = 32 mA, I_core = 19 mA, I_tx = 180 mA, I_rx = 100 mA,
goodput 20 Mbit/s both ways, 0.75 ms per segment, 240 MHz, ECDH keygen 266 ms,
AES-GCM 604 cycles/B, mqtt-packet 0.2 ms.
"""

from __future__ import annotations

import numpy as np
import pytest

from iotsecbench.analysis.describe import cumulative_mah
from iotsecbench.energy.model import MODEL_VERSION, Operation, model_current
from iotsecbench.energy.profile import DeviceProfile, load_profile
from iotsecbench.errors import DataError

MS = 1_000_000  # ns per ms


@pytest.fixture(scope="module")
def profile() -> DeviceProfile:
    return load_profile("esp32-wroom-32")


def _times(windows: int) -> np.ndarray:
    return np.arange(1, windows + 1, dtype=np.int64) * 100 * MS  # windows end at 100, 200, … ms


def _model(
    profile: DeviceProfile, windows: int, operations=(), tx=None, rx=None, txs=None, rxs=None
):
    zeros = np.zeros(windows)
    return model_current(
        profile,
        _times(windows),
        zeros if tx is None else tx,
        zeros if rx is None else rx,
        zeros if txs is None else txs,
        zeros if rxs is None else rxs,
        list(operations),
    )


def test_idle_only_is_exactly_the_associated_idle_current(profile: DeviceProfile) -> None:
    result = _model(profile, 10)
    assert np.array_equal(result.current_ma, np.full(10, 32.0))
    assert result.label == "modelled" and result.model_version == MODEL_VERSION
    assert result.unmodelled_primitives == () and result.cpu_backlog_s == 0.0
    assert np.allclose(result.window_s, 0.1)


def test_known_cpu_load_gives_the_expected_current(profile: DeviceProfile) -> None:
    # 100 mqtt-packet operations at 0.2 ms = 20 ms busy in a 100 ms window → 20 % of a core.
    result = _model(profile, 3, [Operation(t_ns=110 * MS, primitive="mqtt-packet", amount=100)])
    assert result.cpu_fraction == pytest.approx([0.0, 0.2, 0.0])
    assert result.current_ma == pytest.approx([32.0, 32.0 + 19.0 * 0.2, 32.0])  # 35.8 mA
    assert result.cpu_component_ma[1] == pytest.approx(3.8)


def test_bulk_price_is_cycles_per_byte_over_clock_plus_per_call(profile: DeviceProfile) -> None:
    # 4 000 B AES-GCM: 4000·604 / 240e6 = 10.0667 ms (+ 0 µs per call) of a 100 ms window.
    result = _model(profile, 2, [Operation(t_ns=150 * MS, primitive="aes-gcm", amount=4000)])
    assert result.cpu_fraction[1] == pytest.approx(4000 * 604 / 240e6 / 0.1)
    # SHA-256 100 B: 100·9.5/240e6 s + 40 µs.
    result = _model(profile, 2, [Operation(t_ns=150 * MS, primitive="sha256", amount=100)])
    assert result.cpu_fraction[1] == pytest.approx((100 * 9.5 / 240e6 + 40e-6) / 0.1)


def test_long_operation_spreads_over_windows_and_busy_time_is_conserved(
    profile: DeviceProfile,
) -> None:
    # ECDH keygen (266 ms) arriving mid-window 1 (window 100–200 ms, op at 150 ms):
    # 50 ms in window 1, 100 ms in windows 2 and 3, the remaining 16 ms in window 4.
    result = _model(profile, 8, [Operation(t_ns=150 * MS, primitive="ecdh-p256-keygen", amount=1)])
    assert result.cpu_fraction == pytest.approx([0, 0.5, 1, 1, 0.16, 0, 0, 0])
    assert float(np.sum(result.cpu_fraction * result.window_s)) == pytest.approx(0.266)
    assert result.current_ma[2] == pytest.approx(32 + 19)


def test_queue_left_at_the_end_is_reported_not_dropped(profile: DeviceProfile) -> None:
    operations = [
        Operation(t_ns=250 * MS, primitive="ecdh-p256-keygen", amount=1),  # 266 ms, 50 ms fits
        Operation(t_ns=290 * MS, primitive="ecdh-p256-derive", amount=1),  # 265 ms, queued
        Operation(t_ns=900 * MS, primitive="mqtt-packet", amount=5),  # after the last sample
    ]
    result = _model(profile, 3, operations)
    served_s = float(np.sum(result.cpu_fraction * result.window_s))
    assert served_s == pytest.approx(0.05)
    assert result.cpu_backlog_s == pytest.approx(0.266 + 0.265 + 0.001 - 0.05)


def test_airtime_from_bytes_and_segments(profile: DeviceProfile) -> None:
    # 25 000 B at 20 Mbit/s = 10 ms; + 2 segments · 0.75 ms = 11.5 ms of 100 ms → 0.115.
    tx = np.array([0, 25_000, 25_000])
    txs = np.array([0, 2, 2])
    # 12 500 B received = 5 ms, 1 segment = 0.75 ms → 0.0575.
    rx = np.array([0, 12_500, 12_500])
    rxs = np.array([0, 1, 1])
    result = _model(profile, 3, tx=tx, rx=rx, txs=txs, rxs=rxs)
    assert result.tx_fraction == pytest.approx([0, 0.115, 0])
    assert result.rx_fraction == pytest.approx([0, 0.0575, 0])
    expected_ma = 32 + (180 - 32) * 0.115 + (100 - 32) * 0.0575  # 53.93 mA
    assert result.current_ma[1] == pytest.approx(expected_ma)
    assert result.tx_component_ma[1] == pytest.approx(17.02)
    assert result.clipped_airtime_s == pytest.approx(0.0)


def test_first_window_uses_the_counters_as_they_are(profile: DeviceProfile) -> None:
    result = _model(profile, 2, tx=np.array([25_000, 25_000]))
    assert result.tx_fraction == pytest.approx([0.1, 0.0])


def test_counter_reset_counts_the_new_value(profile: DeviceProfile) -> None:
    result = _model(profile, 3, tx=np.array([50_000, 50_000, 25_000]))
    assert result.tx_fraction == pytest.approx([0.2, 0.0, 0.1])


def test_fractions_are_capped_and_clipped_airtime_reported(profile: DeviceProfile) -> None:
    # 500 000 B each way in one 100 ms window = 200 ms of airtime each: both cap at 1, then
    # share the window: tx = rx = 0.5; 0.4 s − 0.1 s = 0.3 s clipped.
    big = np.array([0, 500_000])
    many_ops = [Operation(t_ns=150 * MS, primitive="mqtt-packet", amount=10_000)]  # 2 s of CPU
    result = _model(profile, 2, many_ops, tx=big, rx=big)
    assert result.tx_fraction[1] == pytest.approx(0.5)
    assert result.rx_fraction[1] == pytest.approx(0.5)
    assert result.cpu_fraction[1] == pytest.approx(0.5)  # 50 ms left in the window after 150 ms
    assert result.clipped_airtime_s == pytest.approx(0.3)
    assert np.all(result.cpu_fraction <= 1) and np.all(result.tx_fraction + result.rx_fraction <= 1)
    assert result.current_ma[1] == pytest.approx(32 + 19 * 0.5 + 148 * 0.5 + 68 * 0.5)


def test_components_add_up_to_the_current(profile: DeviceProfile) -> None:
    rng = np.random.default_rng(7)
    tx = np.cumsum(rng.integers(0, 40_000, 50))
    rx = np.cumsum(rng.integers(0, 40_000, 50))
    ops = [Operation(int(t), "aes-gcm", 2000) for t in rng.integers(0, 5000 * MS, 200)]
    result = _model(profile, 50, ops, tx=tx, rx=rx, txs=tx // 1400, rxs=rx // 1400)
    total = (
        result.idle_component_ma
        + result.cpu_component_ma
        + result.tx_component_ma
        + result.rx_component_ma
    )
    assert np.allclose(total, result.current_ma)
    assert set(result.columns()) >= {"t_ns", "current_ma", "cpu_component_ma"}


def test_unknown_primitives_are_listed_and_cost_nothing(profile: DeviceProfile) -> None:
    ops = [Operation(150 * MS, "kyber768-encaps", 1), Operation(160 * MS, "ascon-128", 64)]
    result = _model(profile, 2, ops)
    assert result.unmodelled_primitives == ("ascon-128", "kyber768-encaps")
    assert np.array_equal(result.current_ma, [32.0, 32.0])


def test_bad_inputs_are_data_errors(profile: DeviceProfile) -> None:
    with pytest.raises(DataError, match="increase"):
        model_current(profile, [100, 100], [0, 0], [0, 0], [0, 0], [0, 0], [])
    with pytest.raises(DataError, match="tx_bytes"):
        model_current(profile, [100, 200], [0], [0, 0], [0, 0], [0, 0], [])
    with pytest.raises(ValueError, match="amount"):
        Operation(1, "aes-gcm", -5)


def test_empty_series_reports_all_work_as_backlog(profile: DeviceProfile) -> None:
    result = model_current(profile, [], [], [], [], [], [Operation(1, "rsa2048-private", 1)])
    assert result.current_ma.size == 0 and result.cpu_backlog_s == pytest.approx(0.19)


def test_cumulative_mah_hand_computed() -> None:
    # 100 mA for one hour in 0.1 s windows = 100 mAh; halfway it is 50 mAh.
    charge = cumulative_mah(np.full(36_000, 100.0), 0.1)
    assert charge[-1] == pytest.approx(100.0)
    assert charge[17_999] == pytest.approx(50.0)
    # Uneven windows: 36 mA·10 s + 72 mA·5 s = 720 mA·s = 0.2 mAh.
    assert cumulative_mah([36.0, 72.0], [10.0, 5.0]) == pytest.approx([0.1, 0.2])
