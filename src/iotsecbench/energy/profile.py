"""Device profiles: every number the energy model uses, each with its unit, source, status and
range.

A profile is a TOML file (``energy/profiles/<name>.toml`` for packaged ones, or any user path)
with a ``[device]`` table, ``[parameters.<name>]`` tables and ``[primitives.<name>]`` tables;
see ``esp32-wroom-32.toml`` and docs/energy-model.md. Units are fixed per parameter (no unit
conversion, so a profile cannot silently mean µA where mA is read). A missing, mistyped or
unsourced number is a :class:`~iotsecbench.errors.SpecError` naming the field and the file.

Every number also carries its **range** (schema 2): ``range = [low, high]``, the bounds the
true value cannot leave, with ``range_source`` saying why (a datasheet's tolerance, a
measurement's spread, a derivation's, a guess's width). The model's uncertainty is drawn from
it (``energy.uncertainty``: a PERT distribution with its mode at ``value``). Rules checked at
load: low ≤ value ≤ high; a guess spans at least half its value; the CPU clock is a setting
(no width); a *counted* number states no range of its own — it is the profile's ``cpi``
range scaled to the number (counted instructions × CPI), drawn together with the CPI. A
schema-1 file (no ranges) still loads: each number then gets the default width of its status
(``DEFAULT_WIDTHS``) and the profile says so (``ranges_stated`` False).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from iotsecbench.energy.vocabulary import PRIMITIVE_KINDS, PrimitiveKind
from iotsecbench.errors import SpecError
from iotsecbench.files import read_config_text

__all__ = [
    "DEFAULT_PROFILE",
    "OPTIONAL_PARAMETERS",
    "REQUIRED_PARAMETERS",
    "STATUSES",
    "DeviceProfile",
    "Parameter",
    "PrimitiveCost",
    "load_profile",
    "profile_names",
    "profile_text",
]

DEFAULT_PROFILE = "esp32-wroom-32"
# Profile file versions: 1 — numbers without ranges; 2 — every number with range and
# range_source (counted ones take the CPI's), optional [device] family, clocks_mhz, cores.
PROFILE_SCHEMA = 2
SCHEMAS = (1, 2)

Status = Literal["datasheet", "measured", "derived", "guess", "calibrated", "counted"]
# calibrated = fitted to power-meter traces by `iotsecbench calibrate` (its source names them)
# counted = instructions counted on the device's instruction set under QEMU, turned into time
# by a CPI and the clock (`bench device-costs`, docs/virtual-mcu.md)
STATUSES: tuple[str, ...] = (
    "datasheet",
    "measured",
    "derived",
    "guess",
    "calibrated",
    "counted",
)

# parameter name -> the one unit it must be written in.
REQUIRED_PARAMETERS: dict[str, str] = {
    "supply_voltage": "V",
    "cpu_clock": "MHz",
    "idle_associated_current": "mA",  # whole chip, Wi-Fi associated, CPU idle
    "core_extra_current": "mA",  # added while one core is busy
    "tx_current": "mA",  # whole chip while transmitting
    "rx_current": "mA",  # whole chip while receiving
    "light_sleep_current": "mA",
    "deep_sleep_current": "mA",
    "tx_goodput": "Mbit/s",  # effective TCP payload rate while sending
    "rx_goodput": "Mbit/s",  # effective TCP payload rate while receiving
    "packet_overhead": "ms",  # radio-on time per TCP segment beyond its bytes
}
OPTIONAL_PARAMETERS: dict[str, str] = {
    "auto_light_sleep_associated_current": "mA",
    "peak_current": "mA",
    # cycles per instruction of the core: turns virtual-MCU instruction counts into cycles;
    # its range is every counted number's (docs/energy-model.md)
    "cpi": "cycles/instruction",
    # a handshake's device time (energy.handshake): slower by this share per extra active
    # core (bus and cache contention, the network task on the other core), and the per-
    # handshake work no priced operation covers (ms at cpu_clock, scales with the clock)
    "extra_core_slowdown": "fraction",
    "handshake_overhead": "ms",
    # A crypto accelerator (energy.model.ACCELERATORS): how many times faster than the counted
    # software its primitive family's work runs on it — AES blocks (CTR, CBC, CCM, ECB), and
    # AES-GCM, whose GHASH stays on the CPU
    "aes_accelerator_speedup": "x",
    "aes_gcm_accelerator_speedup": "x",
}
# Parameters whose value is a share: their range stays inside [0, 1].
FRACTIONS = ("extra_core_slowdown",)
# The range a schema-1 number gets from its status (± this share of the value; a guess:
# a factor 3 either way).
DEFAULT_WIDTHS = {"datasheet": 0.10, "measured": 0.20, "derived": 0.30, "calibrated": 0.30}
GUESS_FACTOR = 3.0
# primitive kind -> {cost field: unit}
_PRIMITIVE_FIELDS: dict[str, dict[str, str]] = {
    "bulk": {"cycles_per_byte": "cycles/B", "per_call": "us"},
    "count": {"per_operation": "ms"},
}
_PACKAGE = "iotsecbench.energy.profiles"


@dataclass(frozen=True)
class Parameter:
    """One sourced number of a device profile, with the range it cannot leave."""

    value: float  # the number, in `unit`
    unit: str  # e.g. "mA", "Mbit/s"
    source: str  # document/URL and table it comes from, or the arithmetic deriving it
    status: Status  # datasheet | measured | derived | guess | calibrated | counted
    low: float | None = None  # the range, in `unit` (None: not stated)
    high: float | None = None
    range_source: str = ""  # why the range is what it is

    def __post_init__(self) -> None:
        if not isinstance(self.value, int | float) or isinstance(self.value, bool):
            raise ValueError(f"value must be a number, got {self.value!r}")
        if not math.isfinite(self.value) or self.value < 0:
            raise ValueError(f"value must be finite and >= 0, got {self.value!r}")
        if not isinstance(self.unit, str) or not self.unit.strip():
            raise ValueError("unit must be a non-empty string")
        if not isinstance(self.source, str) or not self.source.strip():
            raise ValueError("source must be a non-empty string")
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {self.status!r}")
        if (self.low is None) != (self.high is None):
            raise ValueError("range must give both ends, [low, high]")
        if self.low is not None and self.high is not None:
            ends = (self.low, self.high)
            if not all(isinstance(e, int | float) and not isinstance(e, bool) for e in ends):
                raise ValueError(f"range must be two numbers, got {list(ends)!r}")
            if not all(math.isfinite(e) for e in ends) or self.low < 0:
                raise ValueError(f"range must be finite and >= 0, got {list(ends)!r}")
            if not self.low <= self.value <= self.high:
                raise ValueError(
                    f"range [{self.low:g}, {self.high:g}] must hold the value {self.value:g}"
                )

    @property
    def stated(self) -> bool:
        """The number has a range."""
        return self.low is not None

    @property
    def bounds(self) -> tuple[float, float]:
        """``(low, high)``; ``(value, value)`` when no range is stated."""
        if self.low is None or self.high is None:
            return self.value, self.value
        return self.low, self.high

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (value, unit, source, status; range and range_source when stated)."""
        record: dict[str, Any] = {
            "value": self.value,
            "unit": self.unit,
            "source": self.source,
            "status": self.status,
        }
        if self.stated:
            record["range"] = [self.low, self.high]
            record["range_source"] = self.range_source
        return record


@dataclass(frozen=True)
class PrimitiveCost:
    """Device price of one primitive: per byte + per call (bulk) or per operation (count)."""

    name: str
    kind: PrimitiveKind
    cycles_per_byte: Parameter | None  # bulk only
    per_call: Parameter | None  # bulk only, µs per call
    per_operation: Parameter | None  # count only, ms per operation
    # Share of the time (at the profile's clock) that scales with the CPU clock; the rest
    # runs on a fixed clock (an accelerator on the APB bus). None: not given, all scales.
    clock_scaled_share: Parameter | None = None

    def busy_seconds(self, amount: int, cpu_clock_hz: float) -> float:
        """Device CPU time for one logged operation with this ``amount`` (bytes or count)."""
        if self.kind == "bulk":
            assert self.cycles_per_byte is not None and self.per_call is not None
            return amount * self.cycles_per_byte.value / cpu_clock_hz + self.per_call.value * 1e-6
        assert self.per_operation is not None
        return amount * self.per_operation.value * 1e-3

    def parameters(self) -> dict[str, Parameter]:
        """The sourced numbers of this price, by field name."""
        candidates = {
            "cycles_per_byte": self.cycles_per_byte,
            "per_call": self.per_call,
            "per_operation": self.per_operation,
            "clock_scaled_share": self.clock_scaled_share,
        }
        return {name: value for name, value in candidates.items() if value is not None}


@dataclass(frozen=True)
class DeviceProfile:
    """A device's electrical, radio and crypto-cost parameters, each sourced."""

    name: str
    description: str
    path: str  # file the profile was loaded from
    parameters: MappingProxyType[str, Parameter]
    primitives: MappingProxyType[str, PrimitiveCost]
    # The published figures this profile claims to describe (energy/published.toml's
    # `family`): its own name unless the file says otherwise (a calibrated copy keeps it).
    family: str = ""
    clocks_mhz: tuple[float, ...] = ()  # the CPU clocks the device runs at (predict handshake)
    cores: tuple[int, ...] = (1,)  # the active-core counts it can run with
    ranges_stated: bool = True  # False: a schema-1 file, ranges from DEFAULT_WIDTHS

    def numbers(self) -> dict[str, Parameter]:
        """Every number by its dotted name: ``tx_current``, ``ecdh-p256-keygen.per_operation``,
        ``rsa2048-public.clock_scaled_share`` (the names calibration and the model's draws
        use)."""
        found = dict(self.parameters)
        for primitive in self.primitives.values():
            for field_name, parameter in primitive.parameters().items():
                found[f"{primitive.name}.{field_name}"] = parameter
        return found

    def value(self, name: str) -> float:
        """Value of parameter ``name`` in its fixed unit (see REQUIRED_PARAMETERS)."""
        return self.parameters[name].value

    @property
    def supply_voltage_v(self) -> float:
        return self.value("supply_voltage")

    @property
    def cpu_clock_hz(self) -> float:
        return self.value("cpu_clock") * 1e6

    @property
    def idle_associated_current_ma(self) -> float:
        return self.value("idle_associated_current")

    @property
    def core_extra_current_ma(self) -> float:
        return self.value("core_extra_current")

    @property
    def tx_current_ma(self) -> float:
        return self.value("tx_current")

    @property
    def rx_current_ma(self) -> float:
        return self.value("rx_current")

    @property
    def tx_goodput_bits_per_s(self) -> float:
        return self.value("tx_goodput") * 1e6

    @property
    def rx_goodput_bits_per_s(self) -> float:
        return self.value("rx_goodput") * 1e6

    @property
    def packet_overhead_s(self) -> float:
        return self.value("packet_overhead") * 1e-3

    def guesses(self) -> list[str]:
        """Names of every number whose status is ``guess`` (to show beside modelled results)."""
        names = [name for name, p in self.parameters.items() if p.status == "guess"]
        for primitive in self.primitives.values():
            names += [
                f"{primitive.name}.{field}"
                for field, p in primitive.parameters().items()
                if p.status == "guess"
            ]
        return names

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict, e.g. to record the profile used with a run's results."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": {name: p.to_dict() for name, p in self.parameters.items()},
            "primitives": {
                name: {"kind": c.kind, **{f: p.to_dict() for f, p in c.parameters().items()}}
                for name, c in self.primitives.items()
            },
        }


def profile_names() -> list[str]:
    """Names of the packaged device profiles."""
    files = resources.files(_PACKAGE).iterdir()
    return sorted(f.name.removesuffix(".toml") for f in files if f.name.endswith(".toml"))


def load_profile(name_or_path: str | Path = DEFAULT_PROFILE) -> DeviceProfile:
    """Load a packaged profile by name, or a user profile from a TOML path.

    Raises SpecError (naming the field and the file) for an unknown name, unreadable file,
    invalid TOML, or a missing, mistyped, negative or unsourced number.
    """
    text, origin = _read(name_or_path)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"device profile {origin}: invalid TOML: {error}") from None
    except RecursionError:
        raise SpecError(f"device profile {origin}: nested too deeply") from None
    return _parse(document, origin)


def profile_text(name_or_path: str | Path) -> str:
    """The file behind a profile name or path, as text (to edit it in place)."""
    return _read(name_or_path)[0]


def _read(name_or_path: str | Path) -> tuple[str, str]:
    raw = str(name_or_path)
    looks_like_path = isinstance(name_or_path, Path) or raw.endswith(".toml") or "/" in raw
    if not looks_like_path:
        names = profile_names()
        if raw not in names:
            raise SpecError(
                f"unknown device profile {raw!r}; packaged profiles: {', '.join(names)} "
                "(or give the path of a .toml profile)"
            )
        resource = resources.files(_PACKAGE).joinpath(f"{raw}.toml")
        return resource.read_text(encoding="utf-8"), f"{raw} ({resource})"
    path = Path(name_or_path)
    # A regular file of bounded size: `device = "/dev/zero"` would otherwise be read until
    # the kernel kills the machine's biggest process.
    return read_config_text(path, "device profile"), str(path)


def _parse(document: dict[str, Any], origin: str) -> DeviceProfile:
    def fail(field: str, problem: str) -> SpecError:
        return SpecError(f"device profile {origin}: {field}: {problem}")

    schema = document.get("schema", 1)
    if schema not in SCHEMAS:
        raise fail("schema", f"version {schema!r} not supported (this iotsecbench reads {SCHEMAS})")
    device = document.get("device")
    if not isinstance(device, dict) or not isinstance(device.get("name"), str):
        raise fail("device.name", 'missing; add a [device] table with name = "..."')
    description = device.get("description", "")
    stated = schema >= 2

    def parameter(field: str, raw: Any, unit: str) -> Parameter:
        if not isinstance(raw, dict):
            raise fail(field, "missing or not a table of value, unit, source, status")
        missing = [key for key in ("value", "unit", "source", "status") if key not in raw]
        if missing:
            raise fail(field, f"missing {', '.join(missing)}")
        if raw["unit"] != unit:
            raise fail(field, f"unit must be {unit!r}, got {raw['unit']!r}")
        unknown = sorted(set(raw) - {"value", "unit", "source", "status", *_RANGE_KEYS})
        if unknown:
            raise fail(f"{field}.{unknown[0]}", "unknown key (typo?)")
        ends = raw.get("range")
        if ends is not None and (not isinstance(ends, list) or len(ends) != 2):
            raise fail(f"{field}.range", "must be [low, high]")
        try:
            number = Parameter(
                raw["value"],
                raw["unit"],
                raw["source"],
                raw["status"],
                *(ends or (None, None)),
                str(raw.get("range_source", "")),
            )
        except ValueError as error:
            raise fail(field, str(error)) from None
        return _checked_range(number, field, stated, fail)

    raw_parameters = document.get("parameters")
    if not isinstance(raw_parameters, dict):
        raise fail("parameters", "missing [parameters.*] tables")
    parameters: dict[str, Parameter] = {}
    for name, unit in {**REQUIRED_PARAMETERS, **OPTIONAL_PARAMETERS}.items():
        if name in raw_parameters or name in REQUIRED_PARAMETERS:
            parameters[name] = parameter(f"parameters.{name}", raw_parameters.get(name), unit)
    unknown = sorted(set(raw_parameters) - set(parameters))
    if unknown:
        raise fail(
            f"parameters.{unknown[0]}",
            "unknown parameter (typo?); known: "
            + ", ".join([*REQUIRED_PARAMETERS, *OPTIONAL_PARAMETERS]),
        )
    for name in ("cpu_clock", "tx_goodput", "rx_goodput"):
        if parameters[name].value <= 0:
            raise fail(f"parameters.{name}", "must be > 0 (it divides)")
    clock = parameters["cpu_clock"]
    if not stated:  # a setting: no default width
        clock = parameters["cpu_clock"] = replace(
            clock, low=clock.value, high=clock.value, range_source="the clock is a setting"
        )
    if clock.bounds[0] != clock.bounds[1]:
        raise fail(
            "parameters.cpu_clock.range",
            "the clock is a setting, not an uncertain number: give range = [value, value]",
        )
    for name in FRACTIONS:
        if name in parameters and parameters[name].bounds[1] > 1:
            raise fail(f"parameters.{name}", "a share: value and range must lie in [0, 1]")

    raw_primitives = document.get("primitives")
    if not isinstance(raw_primitives, dict):
        raise fail("primitives", "missing [primitives.*] tables")
    missing_primitives = [name for name in PRIMITIVE_KINDS if name not in raw_primitives]
    if missing_primitives:
        raise fail(
            f"primitives.{missing_primitives[0]}",
            f"missing; every primitive must be priced ({', '.join(missing_primitives)})",
        )
    primitives: dict[str, PrimitiveCost] = {}
    for name, raw in raw_primitives.items():
        if not isinstance(raw, dict):
            raise fail(f"primitives.{name}", "not a table")
        kind = raw.get("kind")
        expected_kind = PRIMITIVE_KINDS.get(name, kind)
        if kind not in _PRIMITIVE_FIELDS or kind != expected_kind:
            raise fail(
                f"primitives.{name}.kind",
                f"must be {expected_kind!r}"
                if name in PRIMITIVE_KINDS
                else "must be 'bulk' or 'count'",
            )
        costs = {
            field: parameter(f"primitives.{name}.{field}", raw.get(field), unit)
            for field, unit in _PRIMITIVE_FIELDS[kind].items()
        }
        share = None
        if "clock_scaled_share" in raw:
            share = parameter(
                f"primitives.{name}.clock_scaled_share", raw["clock_scaled_share"], "fraction"
            )
            if not 0 <= share.value <= 1 or share.bounds[1] > 1:
                raise fail(
                    f"primitives.{name}.clock_scaled_share", "value and range must lie in [0, 1]"
                )
        unknown_fields = sorted(set(raw) - {"kind", "clock_scaled_share", *_PRIMITIVE_FIELDS[kind]})
        if unknown_fields:
            raise fail(f"primitives.{name}.{unknown_fields[0]}", "unknown field (typo?)")
        primitives[name] = PrimitiveCost(
            name=name,
            kind=kind,
            cycles_per_byte=costs.get("cycles_per_byte"),
            per_call=costs.get("per_call"),
            per_operation=costs.get("per_operation"),
            clock_scaled_share=share,
        )
    parameters, primitives = _counted_ranges(parameters, primitives, fail)
    return DeviceProfile(
        name=device["name"],
        description=str(description),
        path=origin,
        parameters=MappingProxyType(parameters),
        primitives=MappingProxyType(primitives),
        family=_text_field(device, "family", device["name"], fail),
        clocks_mhz=_numbers_field(device, "clocks_mhz", (clock.value,), float, fail),
        cores=_numbers_field(device, "cores", (1,), int, fail),
        ranges_stated=stated,
    )


_RANGE_KEYS = ("range", "range_source")
CPI_RANGE = "counted: the instruction count is exact; the cycles it takes are the CPI's range"


def _checked_range(
    number: Parameter, field: str, stated: bool, fail: Callable[[str, str], SpecError]
) -> Parameter:
    """``number`` with its range checked against its status (a schema-2 file), or given the
    default of its status (schema 1). A counted number's range is set later, from the CPI."""
    if number.status == "counted":
        if number.stated:
            raise fail(
                f"{field}.range",
                "a counted number states no range: it is the profile's cpi range (remove it)",
            )
        return number
    if not stated:
        low, high, why = default_range(number)
        return replace(number, low=low, high=high, range_source=why)
    if not number.stated:
        raise fail(
            field,
            "missing range = [low, high] and range_source (why the true value lies there; "
            "docs/energy-model.md)",
        )
    if not number.range_source.strip():
        raise fail(f"{field}.range_source", "missing: say why the range is what it is")
    low, high = number.bounds
    if number.status == "guess" and (
        (number.value > 0 and high - low < 0.5 * number.value) or high <= 0
    ):
        raise fail(
            f"{field}.range",
            f"a guess must be wide: [{low:g}, {high:g}] spans less than half its value "
            f"{number.value:g}",
        )
    return number


def default_range(number: Parameter) -> tuple[float, float, str]:
    """The range a number gets from its status alone (a schema-1 file; a number written
    without one)."""
    value = number.value
    if number.status == "guess":
        low, high = value / GUESS_FACTOR, value * GUESS_FACTOR
        why = f"not stated (schema 1): a guess's default, a factor {GUESS_FACTOR:g} either way"
    else:
        width = DEFAULT_WIDTHS[number.status]
        low, high = value * (1 - width), value * (1 + width)
        why = f"not stated (schema 1): the default of a {number.status} number, ±{width:.0%}"
    if number.unit == "fraction":
        high = min(high, 1.0)
    return low, high, why


def _counted_ranges(
    parameters: dict[str, Parameter],
    primitives: dict[str, PrimitiveCost],
    fail: Callable[[str, str], SpecError],
) -> tuple[dict[str, Parameter], dict[str, PrimitiveCost]]:
    """Every counted number's range: the CPI's, scaled to the number (instructions × CPI)."""
    counted = [
        (name, field_name)
        for name, cost in primitives.items()
        for field_name, number in cost.parameters().items()
        if number.status == "counted"
    ]
    if not counted:
        return parameters, primitives
    cpi = parameters.get("cpi")
    if cpi is None:
        name, field_name = counted[0]
        raise fail(
            f"primitives.{name}.{field_name}",
            "a counted number needs the profile's cpi (parameters.cpi): its range is the CPI's",
        )
    low, high = cpi.bounds
    updated = dict(primitives)
    for name, field_name in counted:
        number = getattr(updated[name], field_name)
        ratio = number.value / cpi.value if cpi.value > 0 else 0.0
        ranged = replace(number, low=ratio * low, high=ratio * high, range_source=CPI_RANGE)
        updated[name] = replace(updated[name], **{field_name: ranged})
    return parameters, updated


def _text_field(
    table: dict[str, Any], key: str, default: str, fail: Callable[[str, str], SpecError]
) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise fail(f"device.{key}", "must be a non-empty string")
    return value


def _numbers_field(
    table: dict[str, Any],
    key: str,
    default: tuple[Any, ...],
    kind: type,
    fail: Callable[[str, str], SpecError],
) -> tuple[Any, ...]:
    values = table.get(key, list(default))
    if (
        not isinstance(values, list)
        or not values
        or not all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in values)
        or (kind is int and not all(isinstance(v, int) for v in values))
    ):
        raise fail(f"device.{key}", f"must be a list of positive {kind.__name__}s")
    return tuple(kind(v) for v in values)
