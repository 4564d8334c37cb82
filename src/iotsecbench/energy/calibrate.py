"""Fitting a device profile's guessed numbers to measured current (``iotsecbench calibrate``).

The model (energy/model.py) turns an agent's logged activity into a current per sample
window; a meter attached to the run (``iotsecbench attach``) gives the measured current over
the same windows. Calibration finds the parameter values that make the two agree best:
bounded least squares (``scipy.optimize.least_squares``, trust-region reflective) on the
per-window residual modelled − measured, over every attached run at once.

What can be fitted: the electrical parameters (idle and per-core current, TX and RX
current), the radio's airtime (goodputs, per-packet overhead) and each primitive's price
(per operation, per call, per byte). By default every one of them whose status is ``guess``
and that the runs exercise — a primitive no run logged, or a parameter whose change moves no
window, cannot be learnt from them and keeps its value and status. Parameters that only act
together (the per-core current and the prices of the primitives that keep the core busy
scale each other) are told apart only through the numbers held fixed; fit few, and the
result is sharper. Fitted numbers get status ``calibrated`` and a source naming the traces
by their SHA-256, the fit's residual and the value they replace.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from iotsecbench.energy.model import Activity
from iotsecbench.energy.profile import DeviceProfile, Parameter, default_range
from iotsecbench.errors import DataError, SpecError

# Electrical and radio parameters a meter trace can inform (the sleep currents, clock and
# supply voltage do not enter the activity model).
FITTABLE_PARAMETERS = (
    "idle_associated_current",
    "core_extra_current",
    "tx_current",
    "rx_current",
    "tx_goodput",
    "rx_goodput",
    "packet_overhead",
)
PRICE_FIELDS = ("per_operation", "per_call", "cycles_per_byte")
UPPER_FACTOR = 20.0  # bounds: 0 ≤ value ≤ 20 × the starting value (a guess off by 20× is no guess)


@dataclass(frozen=True)
class CalibrationRun:
    """One attached run: the agent's activity (as the model takes it) and the measured mean
    current over each of its sample windows (t_ns: the window's end, as in ``samples``)."""

    name: str
    trace_sha256: str
    activity: Activity
    measured_t_ns: NDArray[np.int64]
    measured_ma: NDArray[np.float64]

    def residuals(self, profile: DeviceProfile) -> NDArray[np.float64]:
        """Modelled − measured current (mA) on each window with a measurement."""
        modelled = self.activity.current(profile)
        index = np.searchsorted(modelled.t_ns, self.measured_t_ns)
        if np.any(index >= len(modelled.t_ns)) or np.any(
            modelled.t_ns[np.minimum(index, len(modelled.t_ns) - 1)] != self.measured_t_ns
        ):
            raise DataError(f"run {self.name}: measured windows do not match its samples")
        return modelled.current_ma[index] - self.measured_ma


@dataclass(frozen=True)
class FittedParameter:
    name: str
    unit: str
    before: float
    after: float
    status_before: str
    standard_error: float  # from the fit's Jacobian: large when runs cannot pin the number


@dataclass(frozen=True)
class Calibration:
    profile: DeviceProfile  # the calibrated profile
    fitted: tuple[FittedParameter, ...]
    not_learnable: tuple[str, ...]  # asked for (or guessed) but moved no window
    rms_before_ma: float  # on the fitted runs
    rms_after_ma: float
    windows: int
    held_out_rms_before_ma: float | None  # on the held-back runs, when there are any
    held_out_rms_after_ma: float | None


def fittable(profile: DeviceProfile) -> dict[str, Parameter]:
    """Every number calibration may fit, by its dotted name (``idle_associated_current``,
    ``ecdh-p256-derive.per_operation``)."""
    found = {name: profile.parameters[name] for name in FITTABLE_PARAMETERS}
    for primitive in profile.primitives.values():
        for field, parameter in primitive.parameters().items():
            if field in PRICE_FIELDS:
                found[f"{primitive.name}.{field}"] = parameter
    return found


def with_values(profile: DeviceProfile, changes: Mapping[str, float | Parameter]) -> DeviceProfile:
    """``profile`` with some numbers (dotted names, as ``fittable``) changed: a float keeps
    the number's unit, source and status (the fit's trial points); a Parameter replaces it
    whole (the result)."""
    parameters = dict(profile.parameters)
    prices: dict[str, dict[str, Parameter]] = {}
    for name, new in changes.items():
        primitive, _, field = name.rpartition(".")
        old = profile.primitives[primitive].parameters()[field] if primitive else parameters[name]
        parameter = new if isinstance(new, Parameter) else _trial(old, float(new))
        if primitive:
            prices.setdefault(primitive, {})[field] = parameter
        else:
            parameters[name] = parameter
    primitives = dict(profile.primitives)
    for primitive, fields in prices.items():
        primitives[primitive] = replace(primitives[primitive], **fields)
    return replace(
        profile,
        parameters=MappingProxyType(parameters),
        primitives=MappingProxyType(primitives),
    )


def _trial(number: Parameter, value: float) -> Parameter:
    """``number`` at a trial value: its range kept while it holds the value (a trial point
    outside it is no profile anyone draws from, so it has none)."""
    low, high = number.bounds
    if number.stated and low <= value <= high:
        return replace(number, value=value)
    return replace(number, value=value, low=None, high=None, range_source="")


def fitted_range(
    number: Parameter, value: float, standard_error: float
) -> tuple[float, float, str]:
    """A calibrated number's range: the fit's ±1.645 standard errors (90 %, as the model's
    ranges), inside [0, ∞) (a fraction: [0, 1]); a number the data cannot pin down (no
    finite error) keeps its old range, widened to hold the fitted value."""
    ceiling = 1.0 if number.unit == "fraction" else math.inf
    if math.isfinite(standard_error):
        low = max(value - 1.645 * standard_error, 0.0)
        high = min(value + 1.645 * standard_error, ceiling)
        return low, max(high, value), "the fit's 90 % interval (±1.645 standard errors)"
    low, high = number.bounds
    return (
        min(low, value),
        max(high, value),
        "not identified by the fit: the range it had, widened to hold the fitted value",
    )


def default_names(profile: DeviceProfile, runs: Sequence[CalibrationRun]) -> list[str]:
    """The guessed numbers these runs exercise: every guessed electrical/radio parameter,
    and the guessed prices of the primitives some run logged."""
    logged = {operation.primitive for run in runs for operation in run.activity.operations}
    return [
        name
        for name, parameter in fittable(profile).items()
        if parameter.status == "guess" and ("." not in name or name.split(".")[0] in logged)
    ]


def _rms(values: NDArray[np.float64]) -> float:
    return float(np.sqrt(np.mean(values**2))) if values.size else math.nan


def _all_residuals(profile: DeviceProfile, runs: Sequence[CalibrationRun]) -> NDArray[np.float64]:
    return np.concatenate([run.residuals(profile) for run in runs])


def calibrate(
    profile: DeviceProfile,
    runs: Sequence[CalibrationRun],
    names: Sequence[str] | None = None,
    held_out: Sequence[CalibrationRun] = (),
    version: str = "",
) -> Calibration:
    """Fit ``names`` (default: ``default_names``) to ``runs``; report the residual before
    and after on them and on ``held_out``. SpecError for an unknown name; DataError when
    there is nothing to fit."""
    from scipy.optimize import least_squares

    if not runs:
        raise DataError("no run with an attached meter trace to calibrate against")
    candidates = fittable(profile)
    names = list(names) if names is not None else default_names(profile, runs)
    unknown = [name for name in names if name not in candidates]
    if unknown:
        raise SpecError(
            f"cannot fit {unknown[0]!r}; fittable: {', '.join(FITTABLE_PARAMETERS)} and "
            f"<primitive>.{{{','.join(PRICE_FIELDS)}}}"
        )
    start = _all_residuals(profile, runs)

    # A number that moves no window when doubled cannot be learnt from these runs.
    learnable, not_learnable = [], []
    for name in names:
        initial = candidates[name].value
        probe = with_values(profile, {name: initial * 2 if initial > 0 else 1.0})
        moved = np.any(np.abs(_all_residuals(probe, runs) - start) > 1e-9)
        (learnable if moved else not_learnable).append(name)
    if not learnable:
        raise DataError(
            "nothing these runs can calibrate: "
            + (", ".join(not_learnable) or "no guessed parameter")
            + " move no measured window (name parameters with --fit)"
        )
    x0 = np.array([candidates[name].value for name in learnable], dtype=float)
    upper = np.where(x0 > 0, x0 * UPPER_FACTOR, 1.0)
    positive = {"tx_goodput", "rx_goodput"}  # they divide
    lower = np.array(
        [1e-9 * u if n in positive else 0.0 for n, u in zip(learnable, upper, strict=True)]
    )
    fit = least_squares(
        lambda x: _all_residuals(with_values(profile, dict(zip(learnable, x, strict=True))), runs),
        np.clip(x0, lower, upper),
        bounds=(lower, upper),
        x_scale=np.where(x0 > 0, x0, 1.0),
        method="trf",
    )
    values = dict(zip(learnable, fit.x.tolist(), strict=True))
    after = _all_residuals(with_values(profile, values), runs)
    errors = standard_errors(fit.jac, after)
    rms_before, rms_after = _rms(start), _rms(after)
    traces = sorted({run.trace_sha256[:12] for run in runs})
    fitted = []
    update: dict[str, Parameter] = {}
    for name in learnable:
        old = candidates[name]
        source = (
            f"calibrated by iotsecbench {version} calibrate against {len(runs)} attached "
            f"run(s), traces sha256 {', '.join(traces)}: RMS residual {rms_after:.4g} mA over "
            f"{start.size} windows ({rms_before:.4g} mA before); fitted together with "
            f"{', '.join(n for n in learnable if n != name) or 'nothing else'}; was "
            f"{old.value:g} ({old.status}: {old.source})"
        )
        error = errors[learnable.index(name)]
        source = f"{values[name]:.6g} ± {error:.2g} {old.unit} (1 standard error) " + source
        low, high, why = fitted_range(old, values[name], error)
        update[name] = Parameter(values[name], old.unit, source, "calibrated", low, high, why)
        fitted.append(FittedParameter(name, old.unit, old.value, values[name], old.status, error))
    calibrated = with_values(profile, update)
    held_before = _rms(_all_residuals(profile, held_out)) if held_out else None
    held_after = _rms(_all_residuals(calibrated, held_out)) if held_out else None
    return Calibration(
        profile=calibrated,
        fitted=tuple(fitted),
        not_learnable=tuple(not_learnable),
        rms_before_ma=rms_before,
        rms_after_ma=rms_after,
        windows=int(start.size),
        held_out_rms_before_ma=held_before,
        held_out_rms_after_ma=held_after,
    )


def standard_errors(jacobian: NDArray[np.float64], residuals: NDArray[np.float64]) -> list[float]:
    """Standard error of each fitted number: sqrt(diag(s² (JᵀJ)⁺)), s² the residual variance
    over the degrees of freedom. Numbers that only act together (see the module's note) get
    large errors even when the residual is small — the honest sign that the runs cannot
    separate them."""
    m, n = jacobian.shape
    if m <= n:
        return [math.inf] * n  # no degree of freedom left: nothing says how sure the fit is
    variance = float(residuals @ residuals) / (m - n)
    covariance = variance * np.linalg.pinv(jacobian.T @ jacobian)
    return np.sqrt(np.clip(np.diag(covariance), 0, None)).tolist()


def _text(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def _fields(parameter: Parameter) -> dict[str, str]:
    """A parameter's table lines as TOML: field name -> value text."""
    value = parameter.value
    fields = {
        "value": repr(value) if isinstance(value, float) else str(value),
        "unit": _text(parameter.unit),
        "source": _text(parameter.source),
        "status": _text(parameter.status),
    }
    # a counted number's range is the CPI's (set at load), so the file states none; one
    # made without a range (a derived price of `bench device-costs`) gets its status's default
    if parameter.status != "counted":
        low, high, why = (
            (*parameter.bounds, parameter.range_source)
            if parameter.stated
            else default_range(parameter)
        )
        if not parameter.stated:
            why = why.replace("not stated (schema 1)", "not stated where it was made")
        fields["range"] = f"[{float(low)!r}, {float(high)!r}]"
        fields["range_source"] = _text(why)
    return fields


def profile_toml(profile: DeviceProfile, header: str = "") -> str:
    """The profile as a TOML file ``load_profile`` reads back unchanged."""

    def table(name: str, parameter: Parameter) -> list[str]:
        return [f"[{name}]", *(f"{k} = {v}" for k, v in _fields(parameter).items()), ""]

    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines += ["", "schema = 2", "", "[device]", f"name = {_text(profile.name)}"]
    lines += [f"family = {_text(profile.family or profile.name)}"]
    if profile.clocks_mhz:
        lines += [f"clocks_mhz = [{', '.join(f'{c:g}' for c in profile.clocks_mhz)}]"]
    lines += [f"cores = [{', '.join(str(c) for c in profile.cores)}]"]
    lines += [f"description = {_text(profile.description)}", ""]
    for name, parameter in profile.parameters.items():
        lines += table(f"parameters.{name}", parameter)
    for name, cost in profile.primitives.items():
        lines += [f"[primitives.{name}]", f"kind = {_text(cost.kind)}", ""]
        for field, parameter in cost.parameters().items():
            lines += table(f"primitives.{name}.{field}", parameter)
    return "\n".join(lines)


def rewrite_parameters(text: str, updates: dict[str, Parameter]) -> str:
    """A profile file's ``text`` with the tables named in ``updates`` (such as
    ``primitives.salsa20.per_call``) given new value, unit, source and status; every other line,
    comments included, as it was. A table the text does not have is a ``KeyError``."""
    lines = text.splitlines(keepends=True)
    for name, parameter in updates.items():
        try:
            start = lines.index(f"[{name}]\n")
        except ValueError:
            raise KeyError(name) from None
        fields = _fields(parameter)
        index, last = start + 1, start
        while index < len(lines) and not lines[index].startswith("["):
            key = lines[index].split("=", 1)[0].strip()
            if key in fields:
                lines[index] = f"{key} = {fields.pop(key)}\n"
                last = index
            elif key in ("range", "range_source"):  # no longer stated (a counted number)
                del lines[index]
                continue
            index += 1
        # fields the table did not have yet (a range), after the last one rewritten
        lines[last + 1 : last + 1] = [f"{key} = {text}\n" for key, text in fields.items()]
    return "".join(lines)


__all__ = [
    "Calibration",
    "CalibrationRun",
    "FittedParameter",
    "calibrate",
    "default_names",
    "fittable",
    "profile_toml",
    "rewrite_parameters",
    "standard_errors",
    "with_values",
]
