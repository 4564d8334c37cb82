"""Placing a run in a meter trace, against injected truth: a sync toggle recovered to one
sample, a correlation lag within 50 ms, an unrelated trace refused; per-phase charge at full
rate within 1 % of what was synthesised."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iotsecbench.errors import DataError
from iotsecbench.meters import phase_charges, read_trace
from iotsecbench.meters.align import by_correlation, by_offset, by_sync

METER_HZ = 2000


def modelled_run(seconds: float = 30.0, seed: int = 0) -> pd.DataFrame:
    """A run's modelled current at 10 Hz: idle 32 mA, a 0.8 s handshake burst at 1 s,
    message bursts of 0.1–0.3 s at random moments (what a run's model looks like)."""
    generator = np.random.default_rng(seed)
    t = np.arange(int(seconds * 10)) / 10
    current = np.full(len(t), 32.0)
    current[(t >= 1.0) & (t < 1.8)] += 60.0
    for start in generator.uniform(2, seconds - 1, 25):
        current[(t >= start) & (t < start + generator.uniform(0.1, 0.3))] += 40.0
    return pd.DataFrame({"time_s": t, "current_ma": current})


def meter_file(path: Path, model: pd.DataFrame, offset_s: float, seed: int = 1,
               sync: tuple[float, float] | None = None, lead_s: float = 5.0) -> Path:  # fmt: skip
    """A PPK2 export of what a meter sees: the model's current (levels 20 % off, as a model
    is) shifted by ``offset_s``, noise, and D0 toggled at the run times in ``sync``."""
    generator = np.random.default_rng(seed)
    duration = float(model["time_s"].iloc[-1]) + 0.1 + offset_s + lead_s
    t = np.arange(int(duration * METER_HZ)) / METER_HZ
    run_time = t - offset_s
    index = np.clip(np.floor(run_time * 10).astype(int), 0, len(model) - 1)
    inside = (run_time >= 0) & (run_time < len(model) / 10)
    current = np.where(inside, 1.2 * model["current_ma"].to_numpy()[index], 30.0)
    current += generator.normal(0, 3.0, len(t))
    d0 = np.zeros(len(t), dtype=int)
    if sync is not None:
        d0[(run_time >= sync[0]) & (run_time < sync[1])] = 1
    lines = ["Timestamp(ms),Current(uA),D0-D7"]
    lines += [
        f"{a * 1e3:.3f},{b * 1e3:.3f},{c}-------" for a, b, c in zip(t, current, d0, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_the_sync_channel_gives_the_offset_to_one_sample(tmp_path: Path) -> None:
    model = modelled_run()
    trace = read_trace(meter_file(tmp_path / "t.csv", model, 3.2173, sync=(1.0, 28.5)))
    found = by_sync(trace.edges, 0, handshake_start_s=1.0, publish_end_s=28.5)
    assert found.offset_s == pytest.approx(3.2173, abs=1 / METER_HZ)
    assert found.clock_ratio == pytest.approx(1.0, abs=1e-3)
    with pytest.raises(DataError, match="not this run's sync"):
        by_sync(trace.edges, 0, handshake_start_s=1.0, publish_end_s=20.0)
    with pytest.raises(DataError, match="D1 toggles 0 time"):
        by_sync(trace.edges, 1, handshake_start_s=1.0, publish_end_s=28.5)


@pytest.mark.parametrize("offset", [2.37, 7.91])
@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_correlation_finds_the_lag_within_50_ms(offset: float, tmp_path: Path) -> None:
    model = modelled_run()
    trace = read_trace(meter_file(tmp_path / "t.csv", model, offset))
    found = by_correlation(trace.series[10], model)
    assert found.offset_s == pytest.approx(offset, abs=0.05)
    assert found.correlation > 0.9


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_an_unrelated_trace_is_refused(tmp_path: Path) -> None:
    trace = read_trace(meter_file(tmp_path / "t.csv", modelled_run(seed=5), 2.0, seed=6))
    with pytest.raises(DataError, match="does not look like this run"):
        by_correlation(trace.series[10], modelled_run(seed=0))


def test_an_explicit_offset_is_taken_as_given() -> None:
    assert by_offset(1.5).offset_s == 1.5
    with pytest.raises(DataError):
        by_offset(float("nan"))


def test_per_phase_charge_at_full_rate(tmp_path: Path) -> None:
    """A PPK2 trace of 10 mA with a 0.8 s burst of 70 mA: the handshake window's charge is
    70 × 0.8 = 56 mC, an idle second 10 mC, recovered within 1 % (windows not on samples)."""
    t = np.arange(5 * METER_HZ) / METER_HZ
    current = np.where((t >= 1.0) & (t < 1.8), 70.0, 10.0)
    lines = ["Timestamp(ms),Current(uA)"]
    lines += [f"{a * 1e3:.3f},{b * 1e3:.3f}" for a, b in zip(t, current, strict=True)]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n")
    windows = {"tls_handshake": (1.0, 1.8), "idle": (2.00025, 3.00025)}
    charges = phase_charges(path, windows, block_rows=777)
    assert charges["tls_handshake"] == pytest.approx(56.0, rel=0.01)
    assert charges["idle"] == pytest.approx(10.0, rel=0.01)
    with pytest.raises(DataError, match="does not cover publishing"):
        phase_charges(path, {"publishing": (4.0, 9.0)})
    # A logger whose clock starts at 100 s: windows count from its first sample, as the
    # reduced series and the sync edges do.
    later = tmp_path / "later.csv"
    later.write_text(
        "time_s,current_ma\n"
        + "".join(f"{100 + a:.4f},{b}\n" for a, b in zip(t, current, strict=True))
    )
    assert phase_charges(later, windows)["tls_handshake"] == pytest.approx(56.0, rel=0.01)
