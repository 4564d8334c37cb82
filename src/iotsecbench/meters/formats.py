"""Readers of power-meter exports, one per format, each detected from the file's header and
yielding ``trace.Block``s of at most ``BLOCK_ROWS`` samples (a file never sits in memory
whole). Units come from the header and are converted to A, V and s; a header that does not
name a unit is refused, never guessed. Sources of every layout: docs/meters.md.

- ``ppk2``: Nordic Power Profiler (nRF Connect) CSV export — ``Timestamp(ms)``,
  ``Current(uA)``, then the digital channels as one ``D0-D7`` string, eight ``D0``…``D7``
  columns, or (older apps) one ``Bits`` string.
- ``joulescope``: the Joulescope UI's waveform CSV (``# time,<serial>.i,<serial>.v,…``, SI
  units, time in s) and its statistics recorder CSV (``#time,current,voltage,…``, relative
  time in s).
- ``usb-meter``: UM25C/UM34C-style USB meter logs as pyummeter's ``ExportCSV`` writes them
  (``;``-separated, ``Date;Voltage (V);Intensity (A);…``, ISO date-times).
- ``otii``: Qoitech Otii CSV export — every column names its quantity and unit in
  parentheses (``Arc Main Current (A)``, ``Arc Main Voltage (V)``), the first column is time
  with its unit (``… (s)``) or ``Wall-clock time (UTC)`` (ISO date-times); fields may be
  quoted. Read from what the header states only (docs/meters.md says how little is
  published about this layout).
- ``generic``: ``time_s`` (or ``time_ms``/``time_us``) and ``current_a``/``current_ma``/
  ``current_ua``, optionally ``voltage_v``/``voltage_mv``: any logger (INA219/INA226, a DAQ).
"""

from __future__ import annotations

import csv
import datetime
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iotsecbench.errors import DataError
from iotsecbench.meters.trace import Block

BLOCK_ROWS = 200_000
SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "a": 1.0, "ma": 1e-3, "ua": 1e-6,
         "µa": 1e-6, "na": 1e-9, "v": 1.0, "mv": 1e-3}  # fmt: skip
DIGITAL_CHARS = {"0": 0, "1": 1, "-": 0, "X": 0, "x": 0}  # PPK2: '-' and 'X' = not sampled


@dataclass(frozen=True)
class Layout:
    """Where a format's quantities are in a row, and the factor to SI for each."""

    delimiter: str
    time: int
    time_scale: float
    current: int
    current_scale: float
    voltage: int | None = None
    voltage_scale: float = 1.0
    digital: tuple[int, ...] = ()  # one column of 8 chars, or 8 columns
    comment_header: bool = False  # header line starts with '#'
    time_is_date: bool = False
    lines_end: bool = True  # the writer ends every line: a last line without one is cut off
    quoted: bool = False  # fields may be in double quotes (no delimiter inside a number)


def _columns(line: str, delimiter: str) -> list[str]:
    return [c.strip() for c in next(csv.reader([line], delimiter=delimiter))]


def _ppk2(header: str) -> Layout | None:
    names = _columns(header, ",")
    if not names or names[0] != "Timestamp(ms)":
        return None
    if "Current(uA)" not in names:
        raise ValueError("PPK2 export without a Current(uA) column: export it with the current")
    if "D0-D7" in names:
        digital: tuple[int, ...] = (names.index("D0-D7"),)
    elif "Bits" in names:
        digital = (names.index("Bits"),)
    elif all(f"D{k}" in names for k in range(8)):
        digital = tuple(names.index(f"D{k}") for k in range(8))
    else:
        digital = ()
    return Layout(",", 0, 1e-3, names.index("Current(uA)"), 1e-6, digital=digital)


def _joulescope(header: str) -> Layout | None:
    if not header.startswith("#"):
        return None
    names = _columns(header.lstrip("#"), ",")
    if names and names[0] in ("time", "timestamp"):
        waveform_i = [k for k, n in enumerate(names) if n.endswith(".i") or n.endswith(".current")]
        if waveform_i:  # waveform export / pyjls csv: <serial>.i, SI units
            volts = [k for k, n in enumerate(names) if n.endswith(".v") or n.endswith(".voltage")]
            return Layout(",", 0, 1.0, waveform_i[0], 1.0, volts[0] if volts else None,
                          comment_header=True)  # fmt: skip
        if "current" in names:  # statistics recorder, relative time
            voltage = names.index("voltage") if "voltage" in names else None
            return Layout(",", 0, 1.0, names.index("current"), 1.0, voltage, comment_header=True)
    if names and names[0] == "current":
        raise ValueError(
            "Joulescope statistics export without time (time format 'off'): record it with "
            "relative time"
        )
    return None


def _usb_meter(header: str) -> Layout | None:
    names = _columns(header, ";")
    if not names or names[0] != "Date" or "Intensity (A)" not in names:
        return None
    voltage = names.index("Voltage (V)") if "Voltage (V)" in names else None
    return Layout(";", 0, 1.0, names.index("Intensity (A)"), 1.0, voltage, time_is_date=True)


# Otii: every column names its quantity and unit, "Arc Main Current (A)"; the time column is
# relative ("… (s)") or "Wall-clock time (UTC)".
_OTII_COLUMN = re.compile(r"^(?P<what>.*?)\s*\((?P<unit>[^()]*)\)$")
_OTII_WALL_CLOCK = "wall-clock time (utc)"


def _otii(header: str) -> Layout | None:
    names = _columns(header, ",")
    if not any("main current" in n.lower() for n in names):
        return None
    units: dict[str, tuple[int, str]] = {}
    for k, name in enumerate(names):
        match = _OTII_COLUMN.match(name)
        what = (match.group("what") if match else name).lower()
        for quantity in ("main current", "main voltage"):
            if what.endswith(quantity) and quantity not in units:
                if match is None:
                    raise ValueError(f"column {name!r} names no unit, e.g. {name} (mA)")
                units[quantity] = (k, match.group("unit").strip().lower())
    index, unit = units["main current"]
    if unit not in ("a", "ma", "ua", "µa", "na"):
        raise ValueError(f"column {names[index]!r}: unit {unit!r} is not a current (A, mA, µA, nA)")
    first = names[0]
    time_match = _OTII_COLUMN.match(first)
    if first.lower() == _OTII_WALL_CLOCK:
        time_scale, is_date = 1.0, True
    elif time_match and time_match.group("unit").strip().lower() in ("s", "ms", "us", "µs"):
        time_scale, is_date = SCALE[time_match.group("unit").strip().lower()], False
    else:
        raise ValueError(
            f"first column {first!r} is not a time with its unit (s, ms, µs) or "
            f"'Wall-clock time (UTC)'"
        )
    voltage = units.get("main voltage")
    if voltage is not None and voltage[1] not in ("v", "mv"):
        raise ValueError(f"column {names[voltage[0]]!r}: unit {voltage[1]!r} is not a voltage")
    return Layout(",", 0, time_scale, index, SCALE[unit], voltage[0] if voltage else None,
                  SCALE[voltage[1]] if voltage else 1.0, time_is_date=is_date, lines_end=False,
                  quoted=True)  # fmt: skip


_GENERIC = re.compile(r"^(time|current|voltage)_(s|ms|us|µs|a|ma|ua|µa|na|v|mv)$", re.I)


def _generic(header: str) -> Layout | None:
    names = [n.lower() for n in _columns(header, ",")]
    found: dict[str, tuple[int, float]] = {}
    for k, name in enumerate(names):
        match = _GENERIC.match(name)
        if match:
            found[match.group(1)] = (k, SCALE[match.group(2)])
    bare = [n for n in names if n in ("time", "current", "voltage", "i", "t", "v")]
    if bare and not ("time" in found and "current" in found):
        raise ValueError(
            f"column {bare[0]!r} names no unit: call it e.g. time_s, current_ma, voltage_v "
            "(docs/meters.md)"
        )
    if "time" not in found or "current" not in found:
        return None
    voltage = found.get("voltage")
    return Layout(",", found["time"][0], found["time"][1], found["current"][0],
                  found["current"][1], voltage[0] if voltage else None,
                  voltage[1] if voltage else 1.0, lines_end=False)  # fmt: skip


# In detection order: the specific layouts before the generic one.
DETECTORS: dict[str, Callable[[str], Layout | None]] = {
    "ppk2": _ppk2,
    "joulescope": _joulescope,
    "usb-meter": _usb_meter,
    "otii": _otii,
    "generic": _generic,
}


def _header(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            return handle.readline().decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise DataError(f"{path}:1: not UTF-8 text (garbage bytes?)") from None


def detect(path: Path, name: str | None = None) -> tuple[str, Layout]:
    """The format of ``path`` (or the one ``name`` says) and its layout; DataError when the
    header matches none, or names a quantity without its unit."""
    header = _header(path)
    candidates = {name: DETECTORS[name]} if name is not None else DETECTORS
    for candidate, detector in candidates.items():
        try:
            layout = detector(header)
        except ValueError as error:
            raise DataError(f"{path}:1: {error}") from None
        if layout is not None:
            return candidate, layout
    if name is not None:
        raise DataError(f"{path}:1: not a {name} header: {header[:80]!r}")
    raise DataError(
        f"{path}:1: header {header[:80]!r} is no known meter format "
        f"({', '.join(DETECTORS)}; docs/meters.md)"
    )


def _date(text: str) -> datetime.datetime:
    try:
        stamp = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"time {text!r} is not an ISO 8601 date-time (export relative time instead?)"
        ) from None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=datetime.UTC)


def _digital(fields: list[str], columns: tuple[int, ...]) -> int:
    if len(columns) == 1:
        chars = fields[columns[0]]
        if len(chars) != 8 or any(c not in DIGITAL_CHARS for c in chars):
            raise ValueError(f"digital channels {chars!r} are not 8 of 0, 1, -, X")
        return sum(DIGITAL_CHARS[c] << k for k, c in enumerate(chars))
    return sum(DIGITAL_CHARS[fields[c]] << k for k, c in enumerate(columns))


def read_blocks(path: Path, layout: Layout, block_rows: int = BLOCK_ROWS) -> Iterator[Block]:
    """The samples of ``path`` in blocks; DataError naming ``file:line`` for a short line,
    a non-numeric or non-finite field, a bad digital field or undecodable bytes."""
    width = 1 + max(layout.time, layout.current, layout.voltage or 0, *layout.digital, 0)
    times: list[float] = []
    currents: list[float] = []
    volts: list[float] = []
    bits: list[int] = []
    first_line = 2
    epoch: datetime.datetime | None = None  # date-stamped formats: time since the first row

    def block() -> Block:
        return Block(
            np.asarray(times, dtype=float),
            np.asarray(currents, dtype=float),
            np.asarray(volts, dtype=float) if layout.voltage is not None else None,
            np.asarray(bits, dtype=np.uint8) if layout.digital else None,
            first_line,
        )

    with path.open("rb") as raw:
        line_number = 0
        try:
            for line_number, encoded in enumerate(raw, start=1):
                # Decoded line by line, so undecodable bytes are reported on their own line.
                line = encoded.decode("utf-8")
                if line_number == 1 or not line.strip() or line.startswith("#"):
                    continue
                if not line.endswith("\n") and layout.lines_end:
                    raise DataError(
                        f"{path}:{line_number}: the last line has no line end: a truncated "
                        "export? (this format's writer ends every line)"
                    )
                fields = line.rstrip("\r\n").split(layout.delimiter)
                if layout.quoted:
                    fields = [f.strip().strip('"') for f in fields]
                if len(fields) < width:
                    raise DataError(
                        f"{path}:{line_number}: {len(fields)} field(s), the header has at least "
                        f"{width} (a truncated line?)"
                    )
                try:
                    if layout.time_is_date:
                        stamp = _date(fields[layout.time])
                        epoch = epoch or stamp
                        t = (stamp - epoch).total_seconds()
                    else:
                        t = float(fields[layout.time]) * layout.time_scale
                    i = float(fields[layout.current]) * layout.current_scale
                    v = (
                        float(fields[layout.voltage]) * layout.voltage_scale
                        if layout.voltage is not None
                        else 0.0
                    )
                    d = _digital(fields, layout.digital) if layout.digital else 0
                except (ValueError, KeyError) as error:
                    raise DataError(f"{path}:{line_number}: {_why(error)}") from None
                if not (math.isfinite(t) and math.isfinite(i) and math.isfinite(v)):
                    raise DataError(f"{path}:{line_number}: a value is not finite (nan or inf)")
                times.append(t)
                currents.append(i)
                volts.append(v)
                bits.append(d)
                if len(times) >= block_rows:
                    yield block()
                    times, currents, volts, bits = [], [], [], []
                    first_line = line_number + 1
        except UnicodeDecodeError:
            raise DataError(f"{path}:{line_number}: not UTF-8 text (garbage bytes?)") from None
    if times:
        yield block()


def _why(error: Exception) -> str:
    text = str(error)
    if text.startswith("could not convert string to float"):
        return f"not a number: {text.split(':', 1)[1].strip()}"
    if isinstance(error, KeyError):
        return f"digital channel {text} is not 0, 1, - or X"
    return text
