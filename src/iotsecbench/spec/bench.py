"""The handshake benchmark's settings (``bench handshake``), validated as an experiment's are:
every default lives here, a preset (``spec/presets/*.toml`` with ``kind =
"bench-handshake"``) or the command line sets the rest, and a bad value is one line naming
the field. Which TLS profiles, stacks and placements this machine can measure is the
benchmark's to check (``bench.handshake_plan``): ``spec`` imports nothing of the project."""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from pydantic import Field, field_validator, model_validator

from iotsecbench.spec.hosts import LOOPBACK
from iotsecbench.spec.models import Stack, StrictModel

BENCH_HANDSHAKE = "bench-handshake"  # a preset's `kind`: a benchmark, not an experiment
DEFAULT_REPETITIONS = 30
DEFAULT_MAX_REPETITIONS = 1000
DEFAULT_TIMEOUT_S = 10.0  # a handshake, and then its CONNACK
DEFAULT_DEVICE_TIMEOUT_S = 120.0  # a whole emulated connection (runner.device's default)
# Settings of the host's method (scheduler traces, CPU placements) a counted benchmark
# (`target`) has no use for: refused on the command line, left out of a preset.
HOST_ONLY = ("trace", "cores", "clock", "keep_retransmissions")
DEFAULT_TRACE_DEVICE = "esp32-wroom-32"  # the iotst study's device
NO_DEVICE = "none"  # device = "none": no modelled device time


def parse_share(text: str) -> Fraction:
    """``1/3``, ``2/3``, ``1`` or ``0.5`` → a fraction in (0, 1]."""
    try:
        value = Fraction(str(text).strip()).limit_denominator(1000)
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"a CPU share is a fraction such as 1/3 or 0.5, got {text!r}") from None
    if not 0 < value <= 1:
        raise ValueError(f"a CPU share lies in (0, 1], got {text!r}")
    return value


def parse_percent(text: str | float) -> float:
    """``1%`` or ``0.01`` → 0.01, a fraction strictly between 0 and 1."""
    raw = str(text).strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ValueError(f"a percentage such as 1% (got {text!r})") from None
    if not 0 < value < 1:
        raise ValueError(f"must lie between 0 and 100 % (got {text!r})")
    return value


class HandshakeBenchmarkSpec(StrictModel):
    """Repeated MQTT-over-TLS connections per TLS profile (docs/tls.md, docs/iotst.md)."""

    kind: Literal["bench-handshake"] = BENCH_HANDSHAKE
    description: str = ""
    # TLS profiles' short names (security.tls.parse_profile), measured interleaved.
    profiles: list[str] = Field(default_factory=list)
    # Measured connections per profile; None: DEFAULT_REPETITIONS, or up to max_repetitions
    # when target_ci is given.
    repetitions: int | None = Field(None, ge=2, le=100_000)
    # Repeat a profile until the 95 % interval's half-width is below this share of the mean
    # (TLS wall and CPU time; traced: the network-invariant cost). "1%" or 0.01.
    target_ci: float | None = None
    max_repetitions: int = Field(DEFAULT_MAX_REPETITIONS, ge=2, le=100_000)
    warmup: int = Field(1, ge=0, le=1000)  # unmeasured connections per profile first
    seed: int = Field(1, ge=0, le=2**63 - 1)  # the interleaving order (a BIGINT)
    trace: bool = False  # scheduler traces, the iotst method (root, tracefs)
    # Core counts the client may use (what this machine allows: bench.handshake_plan).
    cores: list[int] = Field(default_factory=list)
    clock: list[str] = Field(default_factory=list)  # CPU shares emulating slower clocks
    # Device profile of the modelled handshake time beside the host's (with trace; None:
    # DEFAULT_TRACE_DEVICE, "none": no model).
    device: str | None = None
    keep_retransmissions: bool = False  # traced repetitions with TCP retransmissions
    network: str = LOOPBACK  # network profile between client and broker (docs/network.md)
    stack: Stack = "openssl"
    # Seconds a handshake and its CONNACK may take; counted (`target`): a whole emulated
    # connection. None: DEFAULT_TIMEOUT_S, or DEFAULT_DEVICE_TIMEOUT_S with a target.
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, le=3600)
    # A virtual microcontroller (rv32imc, cortex-m4) on which the device's own client counts
    # every handshake instead (docs/device-client.md); None: measured on this host.
    target: str | None = None

    @field_validator("profiles")
    @classmethod
    def _profiles_named(cls, names: list[str]) -> list[str]:
        cleaned = [name.strip() for name in names]
        if any(not name for name in cleaned):
            raise ValueError("profile names must not be empty")
        return cleaned

    @field_validator("target_ci", mode="before")
    @classmethod
    def _target_ci(cls, value: str | float | None) -> float | None:
        return None if value is None else parse_percent(value)

    @field_validator("clock")
    @classmethod
    def _clock(cls, shares: list[str]) -> list[str]:
        return [str(parse_share(share)) for share in shares]

    @model_validator(mode="before")
    @classmethod
    def _timeout_by_method(cls, data: object) -> object:
        if isinstance(data, dict) and data.get("timeout_s") is None and data.get("target"):
            return {**data, "timeout_s": DEFAULT_DEVICE_TIMEOUT_S}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> HandshakeBenchmarkSpec:
        if not self.profiles:
            raise ValueError("give --profiles or --preset (e.g. --preset cipher-suites)")
        if self.repetitions is not None and self.target_ci is not None:
            raise ValueError("give --reps or --target-ci, not both")
        if self.target is not None:
            given = [f"--{name.replace('_', '-')}" for name in HOST_ONLY if getattr(self, name)]
            if given:
                raise ValueError(f"{', '.join(given)} belong to the traced method, not --target")
            return self
        if not self.trace and (self.device is not None or self.keep_retransmissions):
            raise ValueError("--device and --keep-retransmissions belong to --trace")
        return self

    @property
    def planned_repetitions(self) -> int:
        """Connections planned per profile: the cap of a --target-ci benchmark."""
        if self.repetitions is not None:
            return self.repetitions
        return self.max_repetitions if self.target_ci is not None else DEFAULT_REPETITIONS

    @property
    def trace_device(self) -> str | None:
        """The device whose handshake time is modelled beside a traced one (None: none)."""
        if not self.trace or self.device == NO_DEVICE:
            return None
        return self.device or DEFAULT_TRACE_DEVICE

    @property
    def shares(self) -> list[Fraction]:
        return [parse_share(share) for share in self.clock] or [Fraction(1)]
