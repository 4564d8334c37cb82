"""Calibration from measured handshake times: a device profile's handshake prices fitted to
handshakes timed on a device (docs/energy-model.md, "Calibration from timings").

Input: a CSV, one row per timed configuration — ``device, tls_version, group,
signature_algorithm, clock_mhz, cores, seconds, network_included, n`` and optionally
``ci_low, ci_high`` (seconds) — read by ``read_handshake_timings`` with ``file:line`` errors
(exit 4). The caller turns each row into the operations its handshake performs (the security
package knows them; energy does not import it).

The fit is bounded least squares (scipy's ``least_squares``, trust region reflective) of
``energy.handshake.handshake_time`` to the measured seconds, each row's residual relative to
its time (a 2 s handshake and a 40 ms one count alike), over: every priced primitive's price
and ``clock_scaled_share`` (in [0, 1]), ``extra_core_slowdown`` (in [0, 1]) and
``handshake_overhead``. Rows whose time includes network wait are left out (the model prices
computation only) and listed. What the rows cannot tell apart is found before the fit, from
the Jacobian at the start: a number whose column lies in the span of those before it (in the
order above, prices first, the overhead last) keeps its value and says so — e.g. a key
exchange's keygen and derive always occur together, so only their sum is seen, and one
overhead per handshake is the sum of the group prices when every row has one group. Fitted
numbers become ``calibrated`` with the input's SHA-256 and the residuals in their source and
the fit's 90 % interval as their range. ``hold_out`` refits without each configuration in
turn and reports its prediction error (leave-one-configuration-out).
"""

from __future__ import annotations

import csv
import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from iotsecbench.energy.calibrate import fitted_range, standard_errors
from iotsecbench.energy.handshake import handshake_time
from iotsecbench.energy.profile import DeviceProfile, Parameter
from iotsecbench.energy.uncertainty import point_values
from iotsecbench.errors import DataError
from iotsecbench.files import CONFIG_MAX_BYTES, read_user_file

__all__ = [
    "HANDSHAKE_COLUMNS",
    "HandshakeTiming",
    "TimingFit",
    "fit_handshakes",
    "read_handshake_timings",
]

HANDSHAKE_COLUMNS = (
    "device",
    "tls_version",
    "group",
    "signature_algorithm",
    "clock_mhz",
    "cores",
    "seconds",
    "network_included",
    "n",
)
OPTIONAL_COLUMNS = ("ci_low", "ci_high")
_TRUE, _FALSE = ("true", "yes", "1"), ("false", "no", "0")
IDENTIFIED = 1e-6  # a column's share orthogonal to the ones before it, below which it is not


@dataclass(frozen=True)
class HandshakeTiming:
    """One row of a handshake-times CSV."""

    line: int
    device: str
    tls_version: str  # "1.2" | "1.3"
    group: str  # e.g. x25519, P-256; "none": TLS 1.2 RSA key transport
    signature_algorithm: str  # the server certificate's, e.g. ecdsa-p256; "none": resumed
    clock_mhz: float
    cores: int
    seconds: float
    network_included: bool
    n: int
    ci_low: float | None = None
    ci_high: float | None = None

    @property
    def configuration(self) -> str:
        """What leave-one-configuration-out leaves out together."""
        return (
            f"tls{self.tls_version}/{self.group}/{self.signature_algorithm} "
            f"@{self.clock_mhz:g}MHz x{self.cores}"
        )


def read_handshake_timings(path: Path) -> tuple[list[HandshakeTiming], str]:
    """The rows of ``path`` and its SHA-256; ``DataError`` (exit 4) at ``file:line`` for a
    missing column, a negative or non-numeric time, a bad count."""
    raw = read_user_file(path, "handshake-times CSV", CONFIG_MAX_BYTES, "a CSV file")
    sha256 = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError(f"{path}:1: not UTF-8 text: not a handshake-times CSV") from None
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in HANDSHAKE_COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise DataError(
            f"{path}:1: missing column(s) {', '.join(missing)} (a handshake-times CSV has "
            f"{', '.join(HANDSHAKE_COLUMNS)}[, {', '.join(OPTIONAL_COLUMNS)}])"
        )
    rows = []
    for index, record in enumerate(reader, start=2):
        rows.append(_row(record, index, f"{path}:{index}"))
    if not rows:
        raise DataError(f"{path}:2: no rows")
    return rows, sha256


def _row(record: Mapping[str, str | None], line: int, where: str) -> HandshakeTiming:
    def text(column: str) -> str:
        value = (record.get(column) or "").strip()
        if not value:
            raise DataError(f"{where}: {column} is empty")
        return value

    def number(column: str, optional: bool = False) -> float | None:
        value = (record.get(column) or "").strip()
        if optional and not value:
            return None
        try:
            parsed = float(value)
        except ValueError:
            raise DataError(f"{where}: {column} {value!r} is not a number") from None
        if not math.isfinite(parsed) or parsed < 0 or (column != "ci_low" and parsed == 0):
            raise DataError(f"{where}: {column} {value!r} must be a positive number")
        return parsed

    version = text("tls_version").lower().removeprefix("tls").removeprefix("v")
    if version not in ("1.2", "1.3"):
        raise DataError(f"{where}: tls_version {record.get('tls_version')!r}: use 1.2 or 1.3")
    included = text("network_included").lower()
    if included not in _TRUE + _FALSE:
        raise DataError(f"{where}: network_included {included!r}: use true or false")
    cores, n = number("cores"), number("n")
    assert cores is not None and n is not None
    if cores != int(cores) or n != int(n):
        raise DataError(f"{where}: cores and n are whole numbers")
    seconds = number("seconds")
    low, high = number("ci_low", optional=True), number("ci_high", optional=True)
    assert seconds is not None
    if (low is None) != (high is None) or (
        low is not None and high is not None and not low <= seconds <= high
    ):
        raise DataError(f"{where}: ci_low and ci_high must both be given and hold seconds")
    clock = number("clock_mhz")
    assert clock is not None
    return HandshakeTiming(
        line, text("device"), version, text("group"), text("signature_algorithm"), clock,
        int(cores), seconds, included in _TRUE, int(n), low, high,
    )  # fmt: skip


@dataclass(frozen=True)
class FittedNumber:
    name: str  # dotted, as DeviceProfile.numbers
    before: float
    after: float
    standard_error: float


@dataclass(frozen=True)
class HeldOut:
    configuration: str
    measured_s: float
    predicted_s: float

    @property
    def error(self) -> float:
        """Relative prediction error, (predicted − measured)/measured."""
        return (self.predicted_s - self.measured_s) / self.measured_s


@dataclass(frozen=True)
class TimingFit:
    profile: DeviceProfile  # the fitted numbers calibrated, every other as it was
    fitted: tuple[FittedNumber, ...]
    held: tuple[str, ...]  # numbers the rows cannot identify: kept at their value
    left_out_rows: tuple[int, ...]  # lines whose time includes network wait
    residuals: tuple[float, ...]  # relative, per fitted row
    rms_relative: float
    held_out: tuple[HeldOut, ...] = ()


def candidate_names(
    profile: DeviceProfile, operations: Sequence[Sequence[tuple[str, int]]]
) -> list[str]:
    """What the fit may move, in the order identifiability is decided: each priced count
    primitive's price, then its clock-scaled share, then the core factor and the overhead."""
    used = sorted({name for ops in operations for name, _ in ops if name in profile.primitives})
    prices = [
        f"{name}.per_operation" if profile.primitives[name].kind == "count"
        else f"{name}.cycles_per_byte"
        for name in used
    ]  # fmt: skip
    shares = [f"{name}.clock_scaled_share" for name in used]
    return [*prices, *shares, "extra_core_slowdown", "handshake_overhead"]


def fit_handshakes(
    profile: DeviceProfile,
    rows: Sequence[HandshakeTiming],
    operations: Sequence[Sequence[tuple[str, int]]],
    sha256: str,
    version: str = "",
    hold_out: bool = False,
) -> TimingFit:
    """Fit ``profile``'s handshake numbers to ``rows`` (``operations[i]``: row i's priced
    operations). ``DataError`` when fewer rows than the numbers the rows can identify."""
    from scipy.optimize import least_squares

    used = [i for i, row in enumerate(rows) if not row.network_included]
    left_out = tuple(rows[i].line for i in range(len(rows)) if rows[i].network_included)
    fit_rows = [rows[i] for i in used]
    fit_ops = [operations[i] for i in used]
    start = dict(point_values(profile))
    names = candidate_names(profile, fit_ops)
    for name in names:
        start.setdefault(name, 1.0 if name.endswith("clock_scaled_share") else 0.0)
    x0 = np.array([start[n] for n in names], dtype=float)
    upper = np.array([_upper(n, start[n]) for n in names])
    scale = np.where(x0 > 0, x0, np.maximum(upper / 10, 1e-3))
    measured = np.array([r.seconds for r in fit_rows])

    def residuals(
        x: NDArray[np.float64], chosen: Sequence[str], base: dict[str, float]
    ) -> NDArray[np.float64]:
        values = {**base, **dict(zip(chosen, x.tolist(), strict=True))}
        modelled = np.array(
            [float(handshake_time(profile, values, ops, r.clock_mhz, r.cores).seconds)
             for r, ops in zip(fit_rows, fit_ops, strict=True)]
        )  # fmt: skip
        return (modelled - measured) / measured

    free = _identified(lambda x: residuals(x, names, start), x0, scale, names)
    held = tuple(n for n in names if n not in free)
    if len(fit_rows) <= len(free) or not free:
        # no degree of freedom left: a fit would pass through every point and say nothing
        # about how sure it is
        raise DataError(
            f"fewer points than parameters: {len(fit_rows)} timed configuration(s) without "
            f"network wait for {len(free)} identifiable number(s) "
            f"({', '.join(free) or 'none'}); time more configurations (clocks, cores, "
            "groups, certificates)"
        )
    index = [names.index(n) for n in free]
    fit = least_squares(
        lambda x: residuals(x, free, start),
        np.clip(x0[index], 0.0, upper[index]),
        bounds=(np.zeros(len(free)), upper[index]),
        x_scale=scale[index],
        method="trf",
    )
    after = fit.fun
    errors = standard_errors(fit.jac, after)
    fitted = tuple(
        FittedNumber(n, start[n], float(v), e) for n, v, e in zip(free, fit.x, errors, strict=True)
    )
    rms = float(np.sqrt(np.mean(after**2)))
    calibrated = _calibrated(profile, fitted, held, sha256, rms, len(fit_rows), version)
    found = TimingFit(calibrated, fitted, held, left_out, tuple(after.tolist()), rms)
    if not hold_out:
        return found
    return replace(found, held_out=tuple(_leave_one_out(profile, rows, operations, sha256)))


def _upper(name: str, value: float) -> float:
    if name.endswith("clock_scaled_share") or name == "extra_core_slowdown":
        return 1.0
    return max(value * 20.0, 1.0)  # a price or overhead: up to 20 times the profile's


def _identified(
    function, x0: NDArray[np.float64], scale: NDArray[np.float64], names: Sequence[str]
) -> list[str]:  # type: ignore[no-untyped-def]
    """The names whose Jacobian column (scaled, at the start) is not in the span of the
    columns chosen before it."""
    base = function(x0)
    columns = []
    for j in range(len(names)):
        step = np.zeros_like(x0)
        step[j] = 1e-6 * scale[j]
        if names[j].endswith("clock_scaled_share") and x0[j] + step[j] > 1.0:
            step[j] = -step[j]
        columns.append((function(x0 + step) - base) / step[j] * scale[j])
    chosen: list[int] = []
    for j, column in enumerate(columns):
        norm = float(np.linalg.norm(column))
        if norm == 0:
            continue
        if chosen:
            basis = np.column_stack([columns[i] for i in chosen])
            projected = basis @ np.linalg.lstsq(basis, column, rcond=None)[0]
            if np.linalg.norm(column - projected) / norm < IDENTIFIED:
                continue
        chosen.append(j)
    return [names[j] for j in chosen]


def _calibrated(
    profile: DeviceProfile,
    fitted: Sequence[FittedNumber],
    held: Sequence[str],
    sha256: str,
    rms: float,
    rows: int,
    version: str,
) -> DeviceProfile:
    numbers = profile.numbers()
    parameters = dict(profile.parameters)
    primitives = dict(profile.primitives)
    for number in fitted:
        old = numbers.get(number.name)
        unit = old.unit if old is not None else _unit(number.name)
        source = (
            f"{number.after:.6g} ± {number.standard_error:.2g} {unit} (1 standard error), "
            f"calibrated by iotsecbench {version} calibrate --handshakes from {rows} timed "
            f"handshake configuration(s), sha256 {sha256[:16]}: RMS relative residual "
            f"{rms:.3g}; held at their values (not identified): {', '.join(held) or 'none'}; "
            f"was {number.before:g}" + (f" ({old.status}: {old.source})" if old else "")
        )
        template = old or Parameter(number.after, unit, "none", "calibrated")
        low, high, why = fitted_range(template, number.after, number.standard_error)
        new = Parameter(number.after, unit, source, "calibrated", low, high, why)
        primitive, _, field = number.name.rpartition(".")
        if primitive:
            primitives[primitive] = replace(primitives[primitive], **{field: new})
        else:
            parameters[number.name] = new
    return replace(
        profile,
        parameters=MappingProxyType(parameters),
        primitives=MappingProxyType(primitives),
    )


def _unit(name: str) -> str:
    if name.endswith("clock_scaled_share") or name == "extra_core_slowdown":
        return "fraction"
    return "ms"


def _leave_one_out(
    profile: DeviceProfile,
    rows: Sequence[HandshakeTiming],
    operations: Sequence[Sequence[tuple[str, int]]],
    sha256: str,
) -> list[HeldOut]:
    """Each configuration's prediction by a fit without it."""
    found = []
    for configuration in dict.fromkeys(r.configuration for r in rows):
        keep = [i for i, r in enumerate(rows) if r.configuration != configuration]
        try:
            fit = fit_handshakes(
                profile, [rows[i] for i in keep], [operations[i] for i in keep], sha256
            )
        except DataError:
            continue  # too few rows left to fit: no prediction for this one
        values = point_values(fit.profile)
        for row, ops in zip(rows, operations, strict=True):
            if row.configuration == configuration and not row.network_included:
                predicted = handshake_time(fit.profile, values, ops, row.clock_mhz, row.cores)
                found.append(HeldOut(configuration, row.seconds, float(predicted.seconds)))
    return found
