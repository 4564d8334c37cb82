"""Synthetic power-meter traces of stored runs, for the attach tests: what a meter on the
device would record if the device drew the run's modelled current, 20 % higher, with noise —
written as a Nordic PPK2 export with the D0 sync toggles at the run's activity."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.conftest import query

METER_HZ = 2000
OFFSET_S = 3.25
SCALE = 1.2  # the meter reads 20 % above the model, as a real device would differ
NOISE_MA = 0.5  # the meter's noise per sample (standard deviation)


def run_facts(results: Path, run_id: str) -> dict:
    (t0,) = query(results, "select t0_ns from runs where run_id = ?", run_id)[0]
    samples = query(
        results,
        "select t_ns, current_ma from samples where run_id = ? and agent = 'emitter' order by t_ns",
        run_id,
    )
    phases = query(
        results,
        "select phase, t_start_ns, t_end_ns from handshakes where run_id = ? and agent = 'emitter'",
        run_id,
    )
    (end,) = query(results, "select max(t_published_ns) from messages where run_id = ?", run_id)[0]
    ends = (np.array([s[0] for s in samples]) - t0) / 1e9
    return {
        "ends": ends,
        "current": np.array([s[1] for s in samples]),
        "phases": {name: ((a - t0) / 1e9, (b - t0) / 1e9) for name, a, b in phases},
        "activity": (min((a - t0) / 1e9 for _, a, _ in phases), (end - t0) / 1e9),
    }


def true_current(facts: dict, run_s: np.ndarray) -> np.ndarray:
    """What the synthetic device draws (mA): the model's value of the window each instant
    falls in, 20 % higher."""
    ends = facts["ends"]
    index = np.clip(np.searchsorted(ends, run_s, side="left"), 0, len(ends) - 1)
    return SCALE * facts["current"][index]


def write_ppk2(path: Path, facts: dict, *, offset_s: float = OFFSET_S, noise_ma: float = NOISE_MA,
               tail_s: float = 2.0, seed: int = 1, unrelated: bool = False) -> Path:  # fmt: skip
    generator = np.random.default_rng(seed)
    duration = facts["ends"][-1] + offset_s + tail_s
    t = np.arange(int(duration * METER_HZ)) / METER_HZ
    run_s = t - offset_s
    current = true_current(facts, run_s)
    if unrelated:  # bursts at moments that have nothing to do with the run
        current = np.full(len(t), 40.0)
        for start in generator.uniform(0, duration, 40):
            current[(t >= start) & (t < start + 0.2)] += 50.0
    current = current + generator.normal(0, noise_ma, len(t))
    start, end = facts["activity"]
    d0 = (run_s >= start) & (run_s < end)
    lines = [
        f"{ms:.3f},{ua:.3f},{'1' if high else '0'}-------"
        for ms, ua, high in zip(t * 1e3, current * 1e3, d0, strict=True)
    ]
    path.write_text("Timestamp(ms),Current(uA),D0-D7\n" + "\n".join(lines) + "\n")
    return path


def expected_charge_uc(facts: dict, start_s: float, end_s: float) -> float:
    grid = np.linspace(start_s, end_s, 20_001)
    return float(np.trapezoid(true_current(facts, grid), grid)) * 1e3


def charge_tolerance_uc(start_s: float, end_s: float) -> float:
    """How far a phase's measured charge may fall from the truth through the meter alone:
    1 % of the truth for the placement (to one sample) plus four standard deviations of the
    sample noise in the trapezoid over the phase (each sample weighs one interval) — a
    handshake phase of a real run lasts 0.3–1.5 ms, one to three samples at 2 kHz, so the
    noise alone is ~1 % of its charge."""
    dt = 1 / METER_HZ
    samples = max((end_s - start_s) / dt, 1.0)
    return 4 * NOISE_MA * dt * samples**0.5 * 1e3
