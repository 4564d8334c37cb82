"""A power-meter trace reduced while it streams: window means at 10 Hz and 1 Hz, the charge
at full rate, and the edges of the digital channels (what alignment with a run needs).

A reader yields ``Block``s of samples (time in s, current in A, optional voltage in V and
digital bits); ``reduce_blocks`` folds them into a ``MeterTrace`` without ever holding the
whole file: per-window sums and counts, a running trapezoid for the charge, and one entry per
change of the digital bits.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from iotsecbench.errors import DataError

WINDOWS_HZ = (10, 1)  # the stability study's 10 Hz DAQ and the analysis' 1 Hz series
MIN_SAMPLES = 2  # one sample has no interval: no rate, no duration, no charge


@dataclass(frozen=True)
class Block:
    """Consecutive samples of a trace; ``first_line`` locates the first in its file (for
    error messages: ``file:line``, or a sample index for binary files)."""

    time_s: np.ndarray
    current_a: np.ndarray
    voltage_v: np.ndarray | None = None
    digital: np.ndarray | None = None  # uint8 bits, D0 = bit 0; None when not recorded
    first_line: int = 0


@dataclass(frozen=True)
class MeterTrace:
    format: str
    path: Path
    sha256: str
    samples: int
    start_s: float  # time of the first sample, in the file's own clock
    duration_s: float
    rate_hz: float  # from the median sample interval
    charge_mc: float  # ∫ I dt over the whole trace, millicoulomb (trapezoid, full rate)
    series: dict[int, pd.DataFrame] = field(
        default_factory=dict
    )  # Hz → time_s, current_ma[, voltage_v]
    edges: pd.DataFrame | None = None  # time_s, bits: each change of the digital channels

    @property
    def mean_current_ma(self) -> float:
        """Charge over duration: mC / s = mA."""
        return self.charge_mc / self.duration_s if self.duration_s > 0 else math.nan

    @property
    def charge_mah(self) -> float:
        return self.charge_mc / 3600.0  # 1 mAh = 3.6 C


@dataclass
class _Windows:
    """Running sums per window of one width (sample count, current, voltage)."""

    hz: int
    sums: dict[int, list[float]] = field(default_factory=dict)

    def add(self, time_s: np.ndarray, current: np.ndarray, voltage: np.ndarray | None) -> None:
        # Rounded first: 0.3 s × 10 is 2.9999999999999996 in floating point, not window 2.
        index = np.floor(np.round(time_s * self.hz, 6)).astype(np.int64)
        # Time increases (checked before), so each window is one contiguous run of samples.
        starts = np.concatenate(([0], np.flatnonzero(np.diff(index)) + 1))
        keys = index[starts]
        counts = np.diff(np.append(starts, len(index)))
        current_sums = np.add.reduceat(current, starts)
        voltage_sums = (
            np.add.reduceat(voltage, starts) if voltage is not None else np.zeros(len(keys))
        )
        for key, n, c, v in zip(keys.tolist(), counts, current_sums, voltage_sums, strict=True):
            entry = self.sums.setdefault(key, [0, 0.0, 0.0])
            entry[0] += n
            entry[1] += c
            entry[2] += v

    def frame(self, with_voltage: bool) -> pd.DataFrame:
        keys = np.array(sorted(self.sums), dtype=np.int64)
        values = np.array([self.sums[k] for k in keys], dtype=float).reshape(-1, 3)
        frame = pd.DataFrame(
            {"time_s": keys / self.hz, "current_ma": 1e3 * values[:, 1] / values[:, 0]}
        )
        if with_voltage:
            frame["voltage_v"] = values[:, 2] / values[:, 0]
        frame["samples"] = values[:, 0].astype(np.int64)
        return frame


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _joined(path: Path, blocks: Iterable[Block]) -> Iterator[tuple[Block, np.ndarray, np.ndarray]]:
    """Each non-empty block with its time and current preceded by the previous block's last
    sample, so the segment across a join belongs to exactly one block; DataError where time
    does not increase (within a block or across the join)."""
    last: tuple[float, float] | None = None
    for block in blocks:
        if not len(block.time_s):
            continue
        _check_physical(path, block)
        t, i = block.time_s, block.current_a
        if last is not None:
            t, i = np.concatenate(([last[0]], t)), np.concatenate(([last[1]], i))
        bad = np.flatnonzero(np.diff(t) <= 0)
        if bad.size:
            at = bad[0] + (1 if last is None else 0)  # index in the block itself
            raise DataError(
                f"{path}:{block.first_line + at}: time does not increase "
                f"({t[bad[0] + 1]:.9g} s after {t[bad[0]]:.9g} s); a meter file must be in "
                "time order"
            )
        yield block, t, i
        last = (float(t[-1]), float(i[-1]))


# What a meter on an IoT device can record: beyond these a value is a wrong unit or garbage
# (1e308 µA would make the charge overflow), never reduced into a figure.
MAX_CURRENT_A = 1_000.0
MAX_VOLTAGE_V = 1_000.0


def _check_physical(path: Path, block: Block) -> None:
    for name, values, limit, unit in (
        ("current", block.current_a, MAX_CURRENT_A, "A"),
        ("voltage", block.voltage_v, MAX_VOLTAGE_V, "V"),
    ):
        if values is None:
            continue
        bad = np.flatnonzero(~(np.abs(values) <= limit))  # NaN too
        if bad.size:
            value = values[bad[0]]
            raise DataError(
                f"{path}:{block.first_line + int(bad[0])}: {name} {value:.6g} {unit} is not "
                f"physical (beyond ±{limit:g} {unit}): a wrong unit in the header?"
            )


def _trapezoid(t: np.ndarray, i: np.ndarray) -> float:
    return float(np.sum((i[1:] + i[:-1]) / 2 * np.diff(t)))


def reduce_blocks(name: str, path: Path, blocks: Iterable[Block]) -> MeterTrace:
    """Fold a reader's blocks into a ``MeterTrace``; DataError when time goes backwards or
    stands still, or when there is no sample at all."""
    windows = [_Windows(hz) for hz in WINDOWS_HZ]
    samples, charge = 0, 0.0
    first = last_time = None
    last_bits: int | None = None
    edges: list[tuple[float, int]] = []
    with_voltage = with_digital = False
    intervals: list[np.ndarray] = []
    for block, joined_t, joined_i in _joined(path, blocks):
        t, i = block.time_s, block.current_a
        if first is None:
            first = float(t[0])
        charge += _trapezoid(joined_t, joined_i)
        if len(intervals) < 64:  # enough for a median sample interval
            intervals.append(np.diff(t[:10_000]))
        relative = t - first
        for window in windows:
            window.add(relative, i, block.voltage_v)
        with_voltage |= block.voltage_v is not None
        if block.digital is not None:
            with_digital = True
            bits = block.digital.astype(np.int64)
            previous = np.concatenate(([-1 if last_bits is None else last_bits], bits[:-1]))
            for k in np.flatnonzero(bits != previous):
                edges.append((float(relative[k]), int(bits[k])))
            last_bits = int(bits[-1])
        samples += len(t)
        last_time = float(t[-1])
    if not samples or first is None or last_time is None:
        raise DataError(f"{path}: no samples (an empty export, or only a header)")
    if samples < MIN_SAMPLES:
        raise DataError(
            f"{path}: {samples} sample(s); a rate, a duration and a charge need at least "
            f"{MIN_SAMPLES}"
        )
    gaps = np.concatenate(intervals) if intervals else np.array([])
    rate = 1.0 / float(np.median(gaps)) if gaps.size else math.nan
    return MeterTrace(
        format=name,
        path=path,
        sha256=file_sha256(path),
        samples=samples,
        start_s=first,
        duration_s=last_time - first,
        rate_hz=rate,
        charge_mc=1e3 * charge,
        series={w.hz: w.frame(with_voltage) for w in windows},
        edges=pd.DataFrame(edges, columns=["time_s", "bits"]) if with_digital else None,
    )


def interval_charges(
    blocks: Iterable[Block], starts: np.ndarray, ends: np.ndarray, path: Path
) -> np.ndarray:
    """Charge (mC) of the current between each ``starts[k]`` and ``ends[k]`` (seconds from the
    trace's first sample, as ``MeterTrace.series`` and ``edges`` count them) at full rate, in
    one pass whatever the number of intervals: the running trapezoid integral is read at every
    interval end, interpolated inside its sample segment. NaN where the trace does not cover
    the interval."""
    starts, ends = np.asarray(starts, dtype=float), np.asarray(ends, dtype=float)
    points = np.concatenate((starts, ends))
    integral = np.full(points.size, np.nan)  # ∫ I dt from the first sample to each point (C)
    running = 0.0
    first: float | None = None
    for block, t, i in _joined(path, blocks):
        first = float(block.time_s[0]) if first is None else first
        t = t - first
        cumulative = running + np.concatenate(([0.0], np.cumsum((i[1:] + i[:-1]) / 2 * np.diff(t))))
        inside = np.flatnonzero(np.isnan(integral) & (points >= t[0]) & (points <= t[-1]))
        if inside.size and len(t) > 1:
            x = points[inside]
            k = np.clip(np.searchsorted(t, x, side="right") - 1, 0, len(t) - 2)
            current_at_x = i[k] + (i[k + 1] - i[k]) * (x - t[k]) / (t[k + 1] - t[k])
            integral[inside] = cumulative[k] + (x - t[k]) * (i[k] + current_at_x) / 2
        elif inside.size:  # a single-sample first block: only its own instant
            integral[inside] = running
        running = float(cumulative[-1])
    return 1e3 * (integral[starts.size :] - integral[: starts.size])
