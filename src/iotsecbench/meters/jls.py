"""Joulescope ``.jls`` v2 files through ``pyjls`` (PyPI; the format's own library): the
fixed-rate ``current`` signal (A), ``voltage`` (V) when recorded, and the general-purpose
inputs ``gpi[0]``…``gpi[7]`` (1-bit signals) as digital channels. Read ``BLOCK_ROWS``
samples at a time, so a 10-minute 1 MHz recording (600 M samples) never sits in memory."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from iotsecbench.errors import DataError
from iotsecbench.meters.trace import Block

MAGIC = b"jlsfmt\r\n \n \x1a  "
# Each signal's units, to A or V: a current recorded in volts is not guessed into amperes.
UNITS = {
    "current": {"A": 1.0, "mA": 1e-3, "uA": 1e-6, "µA": 1e-6, "nA": 1e-9},
    "voltage": {"V": 1.0, "mV": 1e-3},
}
# pyjls logs its C library's complaints through this logger (~20 lines for a truncated
# file, printed by Python's last-resort handler); the reader's DataError says it in one.
_LIBRARY_LOG = logging.getLogger("pyjls.c")
_LIBRARY_LOG.addHandler(logging.NullHandler())
_LIBRARY_LOG.propagate = False
GPI = re.compile(r"^gpi\[(\d)\]$")


def is_jls(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(len(MAGIC)) == MAGIC


def _scale(path: Path, signal) -> float:
    units = UNITS[signal.name]
    if signal.units not in units:
        raise DataError(
            f"{path}: signal {signal.name!r} has unit {signal.units!r}, not one of "
            f"{', '.join(units)}: not guessed"
        )
    return units[signal.units]


def read_blocks(path: Path, block_rows: int) -> Iterator[Block]:
    """Blocks of the ``current`` signal (with ``voltage`` and ``gpi[k]`` when present);
    DataError for a file pyjls cannot open or without a current signal."""
    from pyjls import Reader

    try:
        reader = Reader(str(path))
    except Exception as error:  # pyjls raises RuntimeError with a C error name
        raise DataError(f"{path}: not a readable JLS v2 file ({error})") from None
    try:
        by_name = {s.name: s for s in reader.signals.values() if s.sample_rate}
        current = by_name.get("current")
        if current is None:
            raise DataError(f"{path}: no fixed-rate 'current' signal (found: {', '.join(by_name)})")
        voltage = by_name.get("voltage")
        gpis = {int(m.group(1)): s for name, s in by_name.items() if (m := GPI.match(name))}
        scales = (_scale(path, current), _scale(path, voltage) if voltage else 1.0)
        rate = float(current.sample_rate)
        length = int(current.length)
        # 1-bit signals come packed 8 to a byte: blocks start on a byte boundary.
        block_rows = max(8, block_rows - block_rows % 8)
        for start in range(0, length, block_rows):
            n = min(block_rows, length - start)
            try:
                amps = np.asarray(reader.fsr(current.signal_id, start, n), dtype=float)
                volts = (
                    np.asarray(reader.fsr(voltage.signal_id, start, n), dtype=float) * scales[1]
                    if voltage is not None
                    else None
                )
                bits = None
                if gpis:
                    bits = np.zeros(n, dtype=np.uint8)
                    for k, signal in gpis.items():
                        packed = reader.fsr(signal.signal_id, start, n)
                        level = np.unpackbits(packed, bitorder="little")[:n]
                        bits |= (level.astype(np.uint8) << k).astype(np.uint8)
            except Exception as error:  # a truncated file fails inside pyjls
                raise DataError(f"{path}: sample {start}: cannot read ({error})") from None
            if not np.isfinite(amps).all():
                bad = start + int(np.flatnonzero(~np.isfinite(amps))[0])
                raise DataError(f"{path}: sample {bad}: current is not finite")
            time_s = (start + np.arange(n)) / rate
            yield Block(time_s, amps * scales[0], volts, bits, start)
    finally:
        reader.close()
