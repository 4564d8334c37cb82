"""Pydantic models of an experiment: every default lives here (one place, layered overrides).

An experiment is a matrix of *cells* (configuration × payload size × message rate × QoS),
each run ``repetitions`` times. Names of configurations are checked against the security
registry by the runner before anything starts (``spec`` imports nothing from the project).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from iotsecbench.spec.hosts import LOOPBACK
from iotsecbench.spec.network import NetworkProfile, resolve_profile

# MQTT's Remaining Length field tops out at 268,435,455 bytes (MQTT 3.1.1 §2.2.3); the
# topic and packet identifier share that budget, so payloads stay a little below it.
MQTT_MAX_PAYLOAD_BYTES = 268_435_455 - 1024
# Each message carries its sequence number and creation time (8 + 8 bytes) inside the
# protected payload, so a payload cannot be smaller than that header.
MESSAGE_HEADER_BYTES = 16
# The tcp transport's largest block (payload per frame): 1 MiB (docs/wire-format.md).
TCP_MAX_BLOCK_BYTES = 1 << 20


# The client's TLS stack (security.tls.stacks.STACKS; spec imports nothing of the project).
Stack = Literal["openssl", "openssl-3.5", "mbedtls", "wolfssl", "wolfssl-5.9"]


class StrictModel(BaseModel):
    """Base for spec models: misspelled keys are errors, values are frozen after validation."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class BrokerSettings(StrictModel):
    """Knobs of the embedded mosquitto broker. mosquitto 2.0.11 accepts nonsense such as
    ``max_inflight_messages -5`` and runs (docs/reliability.md #5), so they are validated here."""

    max_inflight_messages: int = Field(20, ge=0, le=65535)  # 0 = unlimited (mosquitto)
    max_queued_messages: int = Field(1000, ge=0, le=10_000_000)  # 0 = unlimited
    message_size_limit: int = Field(0, ge=0, le=268_435_455)  # bytes; 0 = MQTT maximum
    # Nagle's algorithm meeting delayed ACKs adds ~40 ms to a small message that follows an
    # unacknowledged one; with it on, latency measures TCP timers rather than security.
    # Applies to the broker (`set_tcp_nodelay`) and to both agents' sockets.
    tcp_nodelay: bool = True


class TlsSettings(StrictModel):
    """Options of the TLS transports (``tls1.2``, ``tls1.3``); docs/tls.md. Combinations that
    cannot negotiate what they ask for are refused before anything starts (the runner builds
    each configuration's ``security.tls.TlsProfile``)."""

    # the server's key type (mldsa*: TLS 1.3 on stack openssl-3.5)
    certificate: Literal["rsa2048", "rsa3072", "ecdsa-p256", "ed25519", "mldsa44", "mldsa65"] = (
        "rsa2048"
    )
    # OpenSSL cipher string (TLS 1.2) or ":"-list of TLS_* suites (TLS 1.3); None: default.
    ciphers: str | None = None
    ciphers_tls13: str | None = None  # TLS 1.3 suites when a spec mixes tls1.2 and tls1.3
    group: str | None = None  # key-exchange group: x25519, P-256, P-384, ffdhe2048, modp2048 …
    chain_length: int = Field(1, ge=1, le=3)  # certificates below the root CA
    mutual: bool = False  # the agents present client certificates
    resumption: bool = False  # each agent resumes the session of a priming connection
    security_level: int = Field(2, ge=0, le=5)  # OpenSSL security level, both ends


# An experiment's name labels it and names its default results directory
# (results/<name>-<time>) and its id in every record: a word, never a path.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._+-]{0,79}$"
DESCRIPTION_MAX_CHARACTERS = 10_000

PYTHON_MAX_RATE_HZ = 10_000
# The device emitter (`target`): its stacks and its message buffer (vmcu/client/publish.c);
# how many virtual devices a fleet may have is this machine's (lab/limits.fleet_limit).
DEVICE_STACKS = ("mbedtls", "wolfssl")
DEVICE_MAX_PAYLOAD_BYTES = 64 * 1024
NATIVE_MAX_RATE_HZ = 1_000_000
# A fleet's ceiling in any spec; what one machine allows is lower (lab/limits.fleet_limit).
FLEET_MAX_DEVICES = 10_000


class CellFilter(StrictModel):
    """A partial cell used by ``include``/``exclude``: unset fields match anything."""

    configuration: str | None = None
    payload_bytes: int | None = None
    rate_hz: float | None = None
    qos: int | None = None
    network: str | None = None
    transport: Literal["mqtt", "tcp"] | None = None
    method: Literal["unidirectional", "echo"] | None = None
    stack: Stack | None = None


class ExperimentSpec(StrictModel):
    """A whole experiment: the factors, their levels, and how often each cell runs."""

    name: str = "default"
    description: str = Field("", max_length=DESCRIPTION_MAX_CHARACTERS)
    configurations: list[str] = Field(
        default_factory=lambda: ["plain", "tls1.2", "ecdh-p256-aes128-cbc", "ecdh-p256-aes128-gcm"],
        min_length=1,
    )
    # The configuration names as written, by the canonical name each is stored under (the
    # runner canonicalises: a TLS profile spelled two ways is one configuration,
    # docs/experiment-spec.md); a label, not a factor: no part of config_hash.
    configuration_labels: dict[str, str] = Field(default_factory=dict)
    payload_bytes: list[int] = Field(default_factory=lambda: [256], min_length=1)
    rate_hz: list[float] = Field(default_factory=lambda: [10.0], min_length=1)
    qos: list[int] = Field(default_factory=lambda: [1], min_length=1)
    duration_s: float = Field(20.0, gt=0, le=24 * 3600)  # publishing time per run
    repetitions: int = Field(2, ge=1, le=10_000)
    device: str = "esp32-wroom-32"  # device profile for the energy model
    # run order and payload filler; recorded with the results (a BIGINT, to which each
    # device of a fleet adds its index)
    seed: int = Field(0, ge=0, le=2**63 - 1 - FLEET_MAX_DEVICES)
    include: list[CellFilter] = Field(default_factory=list)  # extra cells (fully specified)
    exclude: list[CellFilter] = Field(default_factory=list)  # cells to drop
    broker: BrokerSettings = Field(default_factory=BrokerSettings)
    tls: TlsSettings = Field(default_factory=TlsSettings)
    connect_timeout_s: float = Field(10.0, gt=0, le=600)
    drain_s: float = Field(2.0, ge=0, le=600)  # receiver waits this long for stragglers
    # Network profiles (a factor): built-in names (spec/presets/networks/) or custom ones
    # from `networks`; anything but `loopback` runs each host in its own namespace.
    network: list[str] = Field(default_factory=lambda: [LOOPBACK], min_length=1)
    networks: dict[str, NetworkProfile] = Field(default_factory=dict)  # custom profiles
    # How messages travel (a factor): `mqtt` through the broker, `tcp` straight from the
    # emitter to the receiver in length-prefixed frames (docs/wire-format.md; the
    # `block-sizes` study). `method`: one way, or `echo` (the receiver returns every block).
    transport: list[Literal["mqtt", "tcp"]] = Field(default_factory=lambda: ["mqtt"], min_length=1)
    method: list[Literal["unidirectional", "echo"]] = Field(
        default_factory=lambda: ["unidirectional"], min_length=1
    )
    # The client's TLS stack (a factor): `openssl` (the Python agents on Debian's OpenSSL
    # 3.0), `openssl-3.5` (the same agents and the broker on OpenSSL 3.5.5: post-quantum TLS,
    # docs/post-quantum.md) or the native agent on a device stack, `mbedtls` or `wolfssl`
    # (Debian's) or `wolfssl-5.9` (built from source, with ML-KEM and ML-DSA; agents/native,
    # docs/native-agents.md).
    stack: list[Stack] = Field(default_factory=lambda: ["openssl"], min_length=1)
    # Send as fast as the link and the CPU allow for duration_s instead of at rate_hz.
    saturating: bool = False
    # A fleet (docs/scale.md): this many emitting devices per run, each with its own
    # connection, client id, credentials, keys and receiver; started `connect_ramp_hz` per
    # second (None: all at once). What this machine allows is checked before a run starts.
    devices: int = Field(1, ge=1, le=FLEET_MAX_DEVICES)
    connect_ramp_hz: float | None = Field(None, gt=0, le=10_000)
    # Who drives a fleet (agents/native/fleet.py): `auto` runs the fleet agent — one process
    # per core, many devices each — where it can (mqtt, no payload scheme, a stack it is
    # built for: openssl, mbedtls, wolfssl), `processes` two agent processes per device.
    fleet_agent: Literal["auto", "processes"] = "auto"
    # A reconnect storm (fleet agent only): this long after the emitters' start every
    # emitter's connection is cut and reconnects at once (docs/scale.md).
    storm_at_s: float | None = Field(None, gt=0, le=3600)
    # Who receives a fleet agent's messages (docs/scale.md, "Ten thousand devices"): `devices`,
    # a receiver connection per device; `backend`, a few backend subscribers per fleet process
    # that hold every device's topics, as a deployment's back end does: the broker then holds
    # one connection per device, and each message is still counted in its device's records.
    fleet_receivers: Literal["devices", "backend"] = "devices"
    # Connect pacing (fleet agent only): at most this many connection set-ups (TCP, TLS, MQTT
    # CONNECT to CONNACK) in flight across the fleet; the others wait their turn, so the
    # broker's accept queue is not overrun (None: every due connect starts at once).
    fleet_max_connecting: int | None = Field(None, ge=1, le=FLEET_MAX_DEVICES)
    # Storage that scales: a fleet stores a summary row per device (fleet_devices) and the
    # raw messages, samples and operations of this many devices, spread evenly from device 0
    # (at least the whole fleet: everything raw).
    fleet_raw_devices: int = Field(100, ge=1, le=FLEET_MAX_DEVICES)
    # The emitter as a virtual microcontroller (docs/device-client.md, "The whole run"): the
    # device's own firmware on `stack` (mbedtls or wolfssl) publishes under QEMU — MQTT through
    # the broker, or frames over the tcp transport — every instruction counted; the receiver
    # stays the Python agent on the host.
    target: Literal["rv32imc", "cortex-m4"] | None = None

    @field_validator("name")
    @classmethod
    def _name_is_a_word(cls, name: str) -> str:
        if not re.match(NAME_PATTERN, name):
            raise ValueError(
                f"{name[:40]!r}{'…' if len(name) > 40 else ''} is not a name: up to 80 "
                "letters, digits, spaces and . _ + - (it names the results directory)"
            )
        return name

    @model_validator(mode="after")
    def _ramp_needs_a_fleet(self) -> ExperimentSpec:
        if self.connect_ramp_hz is not None and self.devices == 1:
            raise ValueError("connect_ramp_hz (--ramp) paces a fleet's devices: give devices > 1")
        return self

    @field_validator("configurations")
    @classmethod
    def _configurations_unique(cls, names: list[str]) -> list[str]:
        cleaned = [name.strip() for name in names]
        if any(not name for name in cleaned):
            raise ValueError("configuration names must not be empty")
        if len(set(cleaned)) != len(cleaned):
            raise ValueError(f"configurations are listed twice: {cleaned}")
        return cleaned

    @field_validator("payload_bytes")
    @classmethod
    def _payload_sizes(cls, sizes: list[int]) -> list[int]:
        for size in sizes:
            if size < MESSAGE_HEADER_BYTES:
                raise ValueError(
                    f"payload size {size} B is too small: each message carries its sequence "
                    f"number and creation time, so use at least {MESSAGE_HEADER_BYTES} B"
                )
            if size > MQTT_MAX_PAYLOAD_BYTES:
                raise ValueError(
                    f"payload size {size} B exceeds what one MQTT message can carry "
                    f"({MQTT_MAX_PAYLOAD_BYTES} B)"
                )
        return sizes

    @field_validator("rate_hz")
    @classmethod
    def _rates(cls, rates: list[float]) -> list[float]:
        for rate in rates:
            if not 0 < rate <= NATIVE_MAX_RATE_HZ:
                raise ValueError(f"message rate {rate} Hz must be in (0, {NATIVE_MAX_RATE_HZ}]")
        return rates

    @model_validator(mode="after")
    def _rate_the_agents_keep(self) -> ExperimentSpec:
        # The Python agents' schedule holds up to 10 kHz; the native agent's far more.
        fast = [rate for rate in self.rate_hz if rate > PYTHON_MAX_RATE_HZ]
        if fast and {"openssl", "openssl-3.5"} & set(self.stack):
            raise ValueError(
                f"message rate {fast[0]:g} Hz is above what the Python agents keep "
                f"({PYTHON_MAX_RATE_HZ} Hz): use stack mbedtls or wolfssl (the native agent), "
                "or --rate max (--saturating) to send as fast as the link allows"
            )
        return self

    @field_validator("qos")
    @classmethod
    def _qos_levels(cls, levels: list[int]) -> list[int]:
        for level in levels:
            if level not in (0, 1, 2):
                raise ValueError(f"QoS {level} does not exist: use 0, 1 or 2")
        return levels

    @model_validator(mode="after")
    def _networks_known(self) -> ExperimentSpec:
        if len(set(self.network)) != len(self.network):
            raise ValueError(f"network profiles are listed twice: {self.network}")
        for name in self.network:
            resolve_profile(name, self.networks)  # ValueError with a suggestion
        return self

    @model_validator(mode="after")
    def _transport_levels(self) -> ExperimentSpec:
        for name, levels in (
            ("transport", self.transport),
            ("method", self.method),
            ("stack", self.stack),
        ):
            if len(set(levels)) != len(levels):
                raise ValueError(f"{name} levels are listed twice: {levels}")
        if "tcp" in self.transport and max(self.payload_bytes) > TCP_MAX_BLOCK_BYTES:
            raise ValueError(
                f"payload size {max(self.payload_bytes)} B exceeds the tcp transport's largest "
                f"block ({TCP_MAX_BLOCK_BYTES} B = 1 MiB)"
            )
        if "tcp" in self.transport and self.tls.resumption:
            raise ValueError("TLS resumption is measured over mqtt only: drop tls.resumption")
        if self.storm_at_s is not None and (self.devices < 2 or self.fleet_agent != "auto"):
            raise ValueError(
                "storm_at_s is a fleet agent's reconnect storm: set devices > 1 and leave "
                "fleet_agent at auto"
            )
        for name, value, default in (
            ("fleet_receivers", self.fleet_receivers, "devices"),
            ("fleet_max_connecting", self.fleet_max_connecting, None),
        ):
            if value != default and (self.devices < 2 or self.fleet_agent != "auto"):
                raise ValueError(
                    f"{name} is the fleet agent's: set devices > 1 and leave fleet_agent at auto"
                )
        if self.fleet_receivers == "backend" and self.saturating:
            raise ValueError(
                "fleet_receivers backend sizes its subscribers to the devices' rate: give "
                "rate_hz instead of saturating"
            )
        if self.devices > 1 and "tcp" in self.transport:
            raise ValueError(
                "a fleet (devices > 1) shares one broker: use transport mqtt (the tcp "
                "transport's receiver serves one emitter)"
            )
        if "echo" in self.method and self.transport == ["mqtt"]:
            raise ValueError("method 'echo' needs transport 'tcp' (the study's raw-TCP echo)")
        return self

    @model_validator(mode="before")
    @classmethod
    def _device_stack(cls, data: object) -> object:
        # With a target and no stack named, the device client runs on mbedTLS.
        if isinstance(data, dict) and data.get("target") and data.get("stack") is None:
            return {**data, "stack": ["mbedtls"]}
        return data

    @model_validator(mode="after")
    def _device_emitter(self) -> ExperimentSpec:
        if self.target is None:
            return self
        wrong = [stack for stack in self.stack if stack not in DEVICE_STACKS]
        if wrong:
            raise ValueError(
                f"--target runs the device's own client on {' or '.join(DEVICE_STACKS)}, not "
                f"{wrong[0]} (--stack mbedtls)"
            )
        if self.saturating and "mqtt" in self.transport:
            # the firmware's MQTT role paces its messages (publish.c); its tcp role (frames.c,
            # the block-sizes study) saturates, and counts instructions per byte there
            raise ValueError(
                "--target publishes MQTT at a fixed rate: --saturating (--rate max) is the tcp "
                "transport's on the device (--transport tcp, the block-sizes study)"
            )
        if max(self.qos) > 1:
            raise ValueError("the device client publishes at QoS 0 or 1, not 2")
        if max(self.payload_bytes) > DEVICE_MAX_PAYLOAD_BYTES:
            raise ValueError(
                f"payload size {max(self.payload_bytes)} B exceeds the device client's buffer "
                f"({DEVICE_MAX_PAYLOAD_BYTES} B)"
            )
        return self

    @model_validator(mode="after")
    def _payload_fits_broker(self) -> ExperimentSpec:
        limit = self.broker.message_size_limit
        if limit and max(self.payload_bytes) > limit:
            # The broker would drop oversize messages silently (docs/reliability.md #3).
            raise ValueError(
                f"payload size {max(self.payload_bytes)} B exceeds broker.message_size_limit "
                f"{limit} B (the broker would drop such messages silently)"
            )
        return self

    def config_hash(self) -> str:
        """Hash of everything that shapes a measurement.

        ``repetitions`` is left out so that ``--resume --reps N`` can extend an experiment;
        ``name``, ``description`` and ``configuration_labels`` are labels, not factors.
        """
        labels = {"repetitions", "name", "description", "configuration_labels"}
        shaping = self.model_dump(mode="json", exclude=labels)
        # The network factor came later: left at its default it leaves the hash (and so the
        # resume of older experiments) unchanged.
        if shaping["network"] == [LOOPBACK]:
            del shaping["network"]
        # Likewise the transport factors, added with the `block-sizes` study.
        for key, default in (
            ("transport", ["mqtt"]),
            ("method", ["unidirectional"]),
            ("stack", ["openssl"]),  # added with the native agents
        ):
            if shaping[key] == default:
                del shaping[key]
        if not shaping["saturating"]:
            del shaping["saturating"]
        if shaping["devices"] == 1 and shaping["connect_ramp_hz"] is None:  # added with fleets
            del shaping["devices"], shaping["connect_ramp_hz"]
        if shaping["fleet_agent"] == "auto" and shaping["storm_at_s"] is None:  # fleet agent
            del shaping["fleet_agent"], shaping["storm_at_s"]
        if shaping["fleet_receivers"] == "devices":  # added with backend subscribers
            del shaping["fleet_receivers"]
        if shaping["fleet_max_connecting"] is None:  # added with connect pacing
            del shaping["fleet_max_connecting"]
        del shaping["fleet_raw_devices"]  # what is stored, not what is measured
        if not shaping["networks"]:
            del shaping["networks"]
        if shaping["target"] is None:  # added with the device emitter
            del shaping["target"]
        for rule in (*shaping["include"], *shaping["exclude"]):
            for key in ("network", "transport", "method", "stack"):
                if rule.get(key) is None:
                    rule.pop(key, None)
        canonical = json.dumps(shaping, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]
