"""Strict readers for measurements supplied as CSV (``iotsecbench analyze --csv``).

Formats are documented in ``docs/csv-formats.md``. Every problem is reported as one
``DataError`` (exit 4) naming ``file:line``: a wrong or missing header, a truncated line, a
non-numeric or non-finite value, an unknown device, or time (or sequence numbers) not
strictly increasing within a run. A file that does not exist is a usage error (exit 2).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd

from iotsecbench.errors import DataError, SpecError

CURRENT_HEADER = ("configuration", "device", "run", "time_s", "current_ma")
LATENCY_HEADER = ("configuration", "run", "seq", "latency_ms")
DEVICES = ("emitter", "receiver")


def _lines(path: Path, handle):  # type: ignore[no-untyped-def]
    """The file's lines as text, decoded one at a time, so a byte that is not UTF-8 is
    reported on its own line (a text-mode file decodes 8 KiB at once: the error would name
    the line being parsed when the chunk was read, often line 1)."""
    for number, raw in enumerate(handle, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DataError(
                f"{path}:{number}: not UTF-8 text (byte {error.start + 1} of the line)"
            ) from None


def _open_rows(path: Path, header: tuple[str, ...]):
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "no such file"
        raise SpecError(f"{path}: {what}")
    try:
        handle = path.open("rb")
    except OSError as error:
        raise SpecError(f"{path}: cannot read ({error.strerror})") from error
    reader = csv.reader(_lines(path, handle))
    try:
        first = next(reader)
    except StopIteration:
        handle.close()
        raise DataError(f"{path}:1: empty file, expected header {','.join(header)}") from None
    except csv.Error as error:
        handle.close()
        raise DataError(f"{path}:1: unreadable header ({error})") from error
    except DataError:
        handle.close()
        raise
    found = tuple(cell.strip().lstrip("\ufeff") for cell in first)
    if found != header:
        handle.close()
        missing = [c for c in header if c not in found]
        extra = [c for c in found if c not in header]
        detail = []
        if missing:
            detail.append(f"missing {', '.join(missing)}")
        if extra:
            detail.append(f"unexpected {', '.join(extra)}")
        if not detail:
            detail.append("columns out of order")
        raise DataError(
            f"{path}:1: header must be {','.join(header)} ({'; '.join(detail)})"
        ) from None
    return handle, reader


# Physical bounds of what the CSV files hold: beyond them a value is not a device's current
# or a message's latency, and sums over a run would overflow to infinity (1e308 mA).
LIMITS = {"current_ma": 1e6, "latency_ms": 1e9, "time_s": 1e9, "seq": 2.0**63}


def _number(path: Path, line: int, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DataError(f"{path}:{line}: {column} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise DataError(f"{path}:{line}: {column} {text!r} is not finite")
    if abs(value) > LIMITS[column]:
        raise DataError(
            f"{path}:{line}: {column} {text} is not physical (beyond ±{LIMITS[column]:g})"
        )
    return value


def _label(path: Path, line: int, column: str, text: str) -> str:
    value = text.strip()
    if not value:
        raise DataError(f"{path}:{line}: {column} is empty")
    return value


def _rows(path: Path, header: tuple[str, ...]):
    handle, reader = _open_rows(path, header)
    with handle:
        try:
            for fields in reader:
                line = reader.line_num
                if not fields or all(not f.strip() for f in fields):
                    continue  # blank line
                if len(fields) != len(header):
                    raise DataError(
                        f"{path}:{line}: {len(fields)} field(s), expected {len(header)} "
                        f"({','.join(header)}); truncated or malformed line"
                    )
                yield line, fields
        except csv.Error as error:
            raise DataError(f"{path}:{reader.line_num}: unreadable line ({error})") from error


def read_current_csv(path: Path | str) -> pd.DataFrame:
    """Read ``configuration,device,run,time_s,current_ma`` strictly.

    Returns
    -------
    DataFrame
        The five columns (``run`` as a string label, ``time_s`` and ``current_ma`` floats).
    """
    path = Path(path)
    columns: dict[str, list] = {name: [] for name in CURRENT_HEADER}
    last_time: dict[tuple[str, str, str], tuple[float, int]] = {}
    for line, fields in _rows(path, CURRENT_HEADER):
        configuration = _label(path, line, "configuration", fields[0])
        device = _label(path, line, "device", fields[1])
        if device not in DEVICES:
            raise DataError(f"{path}:{line}: device {device!r} must be emitter or receiver")
        run = _label(path, line, "run", fields[2])
        time_s = _number(path, line, "time_s", fields[3])
        current_ma = _number(path, line, "current_ma", fields[4])
        key = (configuration, device, run)
        previous = last_time.get(key)
        if previous is not None and time_s <= previous[0]:
            raise DataError(
                f"{path}:{line}: time_s {time_s:g} does not increase within run {run} of "
                f"{configuration}/{device} (line {previous[1]} had {previous[0]:g})"
            )
        last_time[key] = (time_s, line)
        for name, value in zip(
            CURRENT_HEADER, (configuration, device, run, time_s, current_ma), strict=True
        ):
            columns[name].append(value)
    if not columns["time_s"]:
        raise DataError(f"{path}: no data rows after the header")
    return pd.DataFrame(columns)


def read_latency_csv(path: Path | str) -> pd.DataFrame:
    """Read ``configuration,run,seq,latency_ms`` strictly (seq an integer, increasing per run)."""
    path = Path(path)
    columns: dict[str, list] = {name: [] for name in LATENCY_HEADER}
    last_seq: dict[tuple[str, str], tuple[int, int]] = {}
    for line, fields in _rows(path, LATENCY_HEADER):
        configuration = _label(path, line, "configuration", fields[0])
        run = _label(path, line, "run", fields[1])
        seq_value = _number(path, line, "seq", fields[2])
        if seq_value != int(seq_value):
            raise DataError(f"{path}:{line}: seq {fields[2]!r} is not an integer")
        seq = int(seq_value)
        latency_ms = _number(path, line, "latency_ms", fields[3])
        key = (configuration, run)
        previous = last_seq.get(key)
        if previous is not None and seq <= previous[0]:
            raise DataError(
                f"{path}:{line}: seq {seq} does not increase within run {run} of "
                f"{configuration} (line {previous[1]} had {previous[0]})"
            )
        last_seq[key] = (seq, line)
        for name, value in zip(LATENCY_HEADER, (configuration, run, seq, latency_ms), strict=True):
            columns[name].append(value)
    if not columns["seq"]:
        raise DataError(f"{path}: no data rows after the header")
    return pd.DataFrame(columns)
