"""Power-meter traces: detect a meter's export, read it in blocks, reduce it to the 10 Hz
and 1 Hz series, the full-rate charge and the digital channels' edges (docs/meters.md)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from iotsecbench.errors import DataError, SpecError
from iotsecbench.meters import jls
from iotsecbench.meters.formats import BLOCK_ROWS, DETECTORS, detect, read_blocks
from iotsecbench.meters.trace import MeterTrace, interval_charges, reduce_blocks

FORMATS = ("jls", *DETECTORS)


def read_trace(path: Path, format: str | None = None, block_rows: int = BLOCK_ROWS) -> MeterTrace:
    """A meter file, reduced; SpecError (exit 2) when it does not exist or ``format`` is
    unknown, DataError (exit 4, ``file:line`` or sample) when its content is bad — nothing
    is kept from a bad file."""
    path = Path(path)
    name, blocks = _blocks(path, format, block_rows)
    return reduce_blocks(name, path, blocks)


def phase_charges(
    path: Path,
    windows: dict[str, tuple[float, float]],
    format: str | None = None,
    block_rows: int = BLOCK_ROWS,
) -> dict[str, float]:
    """Charge (mC) in each named window (start, end: s from the trace's first sample) at the
    trace's full rate (``charges_between``); DataError when the trace does not cover one."""
    names = list(windows)
    charges = charges_between(
        path,
        np.array([windows[name][0] for name in names]),
        np.array([windows[name][1] for name in names]),
        format,
        block_rows,
    )
    for name, charge in zip(names, charges, strict=True):
        if not math.isfinite(charge):
            start, end = windows[name]
            raise DataError(
                f"{path}: the trace does not cover {name} ({start:.3f}–{end:.3f} s from its "
                "first sample): a trace shorter than the run?"
            )
    return dict(zip(names, charges.tolist(), strict=True))


def charges_between(
    path: Path,
    starts: np.ndarray,
    ends: np.ndarray,
    format: str | None = None,
    block_rows: int = BLOCK_ROWS,
) -> np.ndarray:
    """Charge (mC) between each start and end (s from the trace's first sample) at full rate,
    NaN where the trace does not cover the interval — any number of intervals in one pass
    (every sample window of a run, every message)."""
    path = Path(path)
    _, blocks = _blocks(path, format, block_rows)
    return interval_charges(blocks, starts, ends, path)


def _blocks(path: Path, format: str | None, block_rows: int):
    if not path.is_file():
        raise SpecError(f"{path}: no such file")
    if format is not None and format not in FORMATS:
        raise SpecError(f"--format {format!r}: choose from {', '.join(FORMATS)}")
    if format == "jls" or (format is None and jls.is_jls(path)):
        return "jls", jls.read_blocks(path, block_rows)
    name, layout = detect(path, format)
    return name, read_blocks(path, layout, block_rows)
